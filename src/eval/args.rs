//! A builtin call's arguments, typed and named.
//!
//! From the builtin table (`vocab/builtins.rs`) this makes one record per
//! parameter list, whose fields are the parameters by name with the Rust
//! type of their values (`tb: Arg<Option<i64>>` for `tb: int = absent`),
//! and `Call`, one variant per builtin carrying its record. The evaluator
//! binds a call's values into its `Call` once, and the code that records
//! the op reads `a.src_chunk.value`: a parameter moved or renamed in the
//! table moves with it, and a value of another type than the checker
//! proved is an internal error, never a silent zero.

use super::value::{Chunk, Value};
use super::Res;
use crate::diag::{Code, Diagnostic, Span};
use crate::ir::{BufferKind, DataSync, ReduceOp};
use crate::vocab::{builtin_table, Builtin};
use std::rc::Rc;

/// An argument's value, and where the call gives it (the whole call for a
/// parameter left to its default).
#[derive(Debug)]
pub struct Arg<T> {
    pub value: T,
    pub span: Span,
}

/// The values of a parameter type, read out of a `Value` where it is held
/// (a variable's slot, a constant): most arguments are such, and reading
/// them in place copies no value.
pub trait FromValue: Sized {
    /// What the type is called in messages.
    const WHAT: &'static str;
    /// The value as a `Self`, or `None` when it is not one.
    fn from_value(v: &Value) -> Option<Self>;
    /// Whether `Self` is a list type, which [`Self::from_items`] makes
    /// from a list literal's items without the list value between.
    const LIST: bool = false;
    /// The list of `items` as a `Self`, where `Self` is a list type (and
    /// `None` where an item is not its element).
    fn from_items(_items: &[Value]) -> Option<Self> {
        None
    }
}

macro_rules! from_value {
    ($($ty:ty, $what:literal: $pattern:pat => $value:expr;)*) => {$(
        impl FromValue for $ty {
            const WHAT: &'static str = $what;
            #[inline(always)]
            fn from_value(v: &Value) -> Option<Self> {
                match v {
                    $pattern => Some($value.clone()),
                    _ => None,
                }
            }
        }
    )*};
}

from_value! {
    i64, "an int": Value::Int(i) => i;
    bool, "a bool": Value::Bool(b) => b;
    Rc<str>, "a str": Value::Str(s) => s;
    Chunk, "a chunk": Value::Chunk(c) => c;
    Rc<Vec<u32>>, "a tb_group": Value::TbGroup(tbs) => tbs;
    ReduceOp, "a reduce_op": Value::ReduceOp(op) => op;
    BufferKind, "a buffer_type": Value::BufferType(kind) => kind;
}

/// An int in full, up to u64::MAX (`min`, `max`).
impl FromValue for i128 {
    const WHAT: &'static str = "an int";
    #[inline(always)]
    fn from_value(v: &Value) -> Option<Self> {
        v.wide_int()
    }
}

/// Any value (the argument of `len` and `str`).
impl FromValue for Value {
    const WHAT: &'static str = "a value";
    #[inline(always)]
    fn from_value(v: &Value) -> Option<Self> {
        Some(v.clone())
    }
}

/// A data-sync setting: one of the sync constants, or `none`.
impl FromValue for DataSync {
    const WHAT: &'static str = "a sync_type";
    #[inline(always)]
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Sync(s) => Some(*s),
            Value::NoneConst => Some(DataSync::NONE),
            _ => None,
        }
    }
}

/// The element types of list parameters: read in place, without a clone
/// of the element.
pub trait ListItem: Sized {
    fn from_item(v: &Value) -> Option<Self>;
}

impl ListItem for i64 {
    fn from_item(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl ListItem for Chunk {
    fn from_item(v: &Value) -> Option<Self> {
        match v {
            Value::Chunk(c) => Some(*c),
            _ => None,
        }
    }
}

/// A list parameter's elements: a few, kept inline (a reduce's list of
/// chunks is most often one), so that binding one allocates nothing.
pub type Items<T> = smallvec::SmallVec<[T; 4]>;

/// A list whose every element is a `T`.
impl<T: ListItem> FromValue for Items<T> {
    const WHAT: &'static str = "a list";
    #[inline(always)]
    fn from_value(v: &Value) -> Option<Self> {
        let Value::List(items) = v else {
            return None;
        };
        Self::from_items(items)
    }
    const LIST: bool = true;
    #[inline(always)]
    fn from_items(items: &[Value]) -> Option<Self> {
        items.iter().map(T::from_item).collect()
    }
}

/// A parameter that may be left out (`= absent`): `None` when it was.
impl<T: FromValue> FromValue for Option<T> {
    const WHAT: &'static str = T::WHAT;
    #[inline(always)]
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Unit => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
    const LIST: bool = T::LIST;
    #[inline(always)]
    fn from_items(items: &[Value]) -> Option<Self> {
        T::from_items(items).map(Some)
    }
}

/// Where a call's arguments come from, in parameter order (the evaluator,
/// which evaluates each as it is asked for it).
pub trait Arguments {
    /// The next argument, as parameter `name`'s type ([`wrong_type`] when
    /// it is not one), and where the call gives it (the whole call for a
    /// parameter left to its default).
    fn next<T: FromValue>(&mut self, name: &str) -> Res<Arg<T>>;
    /// Passes over the next argument: one bound before, which keeps its
    /// value (`Call::rebind`).
    fn skip(&mut self);
}

/// The Rust type of a table's type word.
macro_rules! rust_type {
    ([$item:tt]) => { Items<rust_type!($item)> };
    (any) => { Value };
    (int) => { i64 };
    (wide_int) => { i128 };
    (bool) => { bool };
    (str) => { Rc<str> };
    (chunk) => { Chunk };
    (tb_group) => { Rc<Vec<u32>> };
    (reduce_op) => { ReduceOp };
    (sync_type) => { DataSync };
    (buffer_type) => { BufferKind };
}

/// The Rust type of a parameter: optional when its default is `absent`.
macro_rules! arg_type {
    ($ty:tt) => { rust_type!($ty) };
    ($ty:tt absent) => { Option<rust_type!($ty)> };
    ($ty:tt $default:tt) => { rust_type!($ty) };
}

/// The evaluator's side of the table: the records and `Call`.
macro_rules! declare_arguments {
    (
        shapes { $($shape:ident ( $($param:ident : $ty:tt $(= $default:tt)?),* $(,)? );)* }
        builtins { $($builtin:ident : $receiver:ident $name:literal $uses:ident -> $ret:tt, $doc:literal;)* }
    ) => {
        $(
            #[derive(Debug)]
            pub struct $shape {
                $(pub $param: Arg<arg_type!($ty $($default)?)>,)*
            }

            impl $shape {
                #[inline(always)]
                fn bind(args: &mut impl Arguments) -> Res<$shape> {
                    Ok($shape {
                        $($param: args.next(stringify!($param))?,)*
                    })
                }

                /// Binds again the parameters whose bits `varying` sets
                /// (the first parameter's is bit 0); the others keep
                /// their values.
                #[inline(always)]
                #[allow(unused_assignments, unused_variables, unused_mut)]
                fn rebind(&mut self, args: &mut impl Arguments, varying: u64) -> Res<()> {
                    let mut bit = 1u64;
                    $(
                        if varying & bit != 0 {
                            self.$param = args.next(stringify!($param))?;
                        } else {
                            args.skip();
                        }
                        bit <<= 1;
                    )*
                    Ok(())
                }
            }
        )*

        /// A builtin call with its arguments bound.
        #[derive(Debug)]
        pub enum Call {
            $($builtin($uses),)*
        }

        impl Call {
            /// Binds `builtin`'s arguments, which `args` gives in parameter order.
            pub fn bind(builtin: Builtin, args: &mut impl Arguments) -> Res<Call> {
                Ok(match builtin {
                    $(Builtin::$builtin => Call::$builtin($uses::bind(args)?),)*
                })
            }

            /// Binds again the arguments whose bits `varying` sets, in
            /// a call bound before (`MethodCandidate::varying`).
            pub fn rebind(&mut self, args: &mut impl Arguments, varying: u64) -> Res<()> {
                match self {
                    $(Call::$builtin(a) => a.rebind(args, varying),)*
                }
            }

            pub fn builtin(&self) -> Builtin {
                match self {
                    $(Call::$builtin(_) => Builtin::$builtin,)*
                }
            }
        }
    };
}

builtin_table!(declare_arguments);

/// Argument `name`, at `span`, is `value`, an int past `i64::MAX` (or a
/// list holding one) where the builtin counts in 64 bits.
#[cold]
pub fn too_large(name: &str, value: &Value, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::OutOfRange,
        span,
        format!("`{name}` is {}, too large here", value.brief()),
        format!("only message sizes go above {}", i64::MAX),
    )
}

/// Argument `name`, at `span`, is `value`, which is not a `T`.
#[cold]
pub fn wrong_type<T: FromValue>(name: &str, value: &Value, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::Internal,
        span,
        format!(
            "internal error: argument `{name}` is `{value}`, not {}",
            T::WHAT
        ),
        "the type checker let this through",
    )
    .with_note("this is a bug in msclc; please report it with this program")
}
