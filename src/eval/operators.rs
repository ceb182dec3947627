//! The operators: arithmetic, comparison and `in` on the values an
//! expression gives (ints in 64 bits where they fit, up to `u64::MAX`
//! where not; large values walked at a cost in steps), and `&&`/`||`,
//! which short-circuit.

use super::*;

impl<'c> Evaluator<'c> {
    /// `a op b`, at `span`.
    #[inline(never)]
    pub(super) fn binary(&mut self, span: Span, op: BinOp, a: &'c Expr, b: &'c Expr) -> Res<Value> {
        // `&&` and `||` short-circuit.
        if matches!(op, BinOp::And | BinOp::Or) {
            let left = self.cond(a)?;
            if (op == BinOp::And) != left {
                return Ok(Value::Bool(left));
            }
            return Ok(Value::Bool(self.cond(b)?));
        }
        if !matches!(op, BinOp::In) {
            if let (Some(i), Some(j)) = (self.int_leaf(a), self.int_leaf(b)) {
                return self.ints(span, op, i, j);
            }
        }
        let (x, y) = (self.operand(a)?, self.operand(b)?);
        // Two ints, the common case (indices, ranks, `peer != gpu`),
        // compared and combined without looking at the other kinds.
        if let (Value::Int(i), Value::Int(j)) = (&x, &y) {
            if !matches!(op, BinOp::In) {
                return self.ints(span, op, *i, *j);
            }
        }
        if let (Some(i), Some(j)) = (x.wide_int(), y.wide_int()) {
            if !matches!(op, BinOp::In) {
                return self.wide(span, op, i, j);
            }
        }
        // Comparing and searching walk the values: large ones cost steps.
        if matches!(op, BinOp::Eq | BinOp::Ne | BinOp::In) {
            if let (Value::Str(s), Value::Str(t)) = (&x, &y) {
                self.work(span, s.len().min(t.len()), true)?;
            }
            // Equal values are compared through; `in` compares `x` with
            // each element of a list or tuple, and hashes it to look in a
            // map (which it does not walk).
            match (op, &y) {
                (BinOp::In, Value::Map(_)) => self.walk_parts(span, &x)?,
                (BinOp::In, _) => self.walk_parts(span, &y)?,
                _ => {
                    self.walk_parts(span, &x)?;
                    self.walk_parts(span, &y)?;
                }
            }
        }
        use BinOp::*;
        Ok(match (op, &x, &y) {
            (Eq, _, _) => Value::Bool(x == y),
            (Ne, _, _) => Value::Bool(x != y),
            (In, _, _) => Value::Bool(match &y {
                Value::List(items) => items.contains(&x),
                Value::Tuple(_) | Value::Pair(..) => {
                    y.tuple_items().is_some_and(|t| t.contains(&x))
                }
                Value::Range(lo, hi) => matches!(x, Value::Int(v) if *lo <= v && v < *hi),
                Value::Map(m) => m.get(&x).is_some(),
                _ => {
                    return Err(self.error(
                        Code::TypeMismatch,
                        span,
                        format!("cannot test membership in `{y}`"),
                        "not a list, range or map",
                    ))
                }
            }),
            (Add, Value::Str(s), Value::Str(t)) => {
                self.within_size(span, s.len() + t.len(), "a string", "bytes")?;
                self.work(span, s.len() + t.len(), true)?;
                Value::Str(Rc::from(format!("{s}{t}").as_str()))
            }
            (Add, Value::List(s), Value::List(t)) => {
                self.within_size(span, s.len() + t.len(), "a list", "elements")?;
                self.work(span, s.len() + t.len(), false)?;
                Value::List(s.iter().chain(t.iter()).cloned().collect())
            }
            _ => {
                return Err(self.error(
                    Code::TypeMismatch,
                    span,
                    format!("cannot apply `{}` to `{x}` and `{y}`", op.symbol()),
                    "wrong operands",
                ))
            }
        })
    }

    /// `e` as a condition (a loop's filter, an `if`, an operand of `&&`
    /// or `||`): a comparison of two ints held in variables or constants
    /// (`peer != gpu`, the usual filter) is decided where they are held,
    /// without making a value.
    #[inline(always)]
    pub(super) fn cond(&mut self, e: &'c Expr) -> Res<bool> {
        if let ExprKind::Binary(op, a, b) = &e.kind {
            if let (Some(x), Some(y)) = (self.int_leaf(a), self.int_leaf(b)) {
                if let Some(holds) = compare(*op, x, y) {
                    return Ok(holds);
                }
            }
        }
        Ok(self.expr(e)?.as_bool())
    }

    /// `x op y` for two ints (`op` is neither `in` nor a short-circuit),
    /// in 64 bits where the result fits, else in [`Self::wide`].
    fn ints(&self, span: Span, op: BinOp, x: i64, y: i64) -> Res<Value> {
        if let Some(holds) = compare(op, x, y) {
            return Ok(Value::Bool(holds));
        }
        self.right_operand_fits(span, op, y.into())?;
        use BinOp::*;
        let fits = match op {
            Add => x.checked_add(y),
            Sub => x.checked_sub(y),
            Mul => x.checked_mul(y),
            Div => floor_div(x, y),
            Rem => Some(floor_mod(x, y)),
            // `1 << 63` is past i64::MAX, which a 64-bit shift would
            // not say: shifts are worked wide.
            Shl => None,
            Shr => Some(x >> y),
            BitAnd => Some(x & y),
            BitOr => Some(x | y),
            BitXor => Some(x ^ y),
            // `compare` took the comparisons above, and `binary` handles
            // the others before it comes here.
            Eq | Ne | Lt | Le | Gt | Ge | In | And | Or => return Ok(Value::Unit),
        };
        match fits {
            Some(v) => Ok(Value::Int(v)),
            None => self.wide(span, op, x.into(), y.into()),
        }
    }

    /// `x op y` for ints where an operand or the result is past the 64
    /// bits of an `i64`: worked in 128, and an int if the result is one
    /// (from `i64::MIN` to `u64::MAX`, the largest message size), else
    /// an overflow.
    #[cold]
    fn wide(&self, span: Span, op: BinOp, x: i128, y: i128) -> Res<Value> {
        if let Some(holds) = compare(op, x, y) {
            return Ok(Value::Bool(holds));
        }
        self.right_operand_fits(span, op, y)?;
        use BinOp::*;
        let result = match op {
            Add => x.checked_add(y),
            Sub => x.checked_sub(y),
            Mul => x.checked_mul(y),
            Div => floor_div_wide(x, y),
            Rem => Some(floor_mod_wide(x, y)),
            Shl => x.checked_mul(1 << y),
            Shr => Some(x >> y),
            BitAnd => Some(x & y),
            BitOr => Some(x | y),
            BitXor => Some(x ^ y),
            Eq | Ne | Lt | Le | Gt | Ge | In | And | Or => return Ok(Value::Unit),
        };
        result.and_then(Value::int).ok_or_else(|| {
            self.error(
                Code::Arithmetic,
                span,
                "integer overflow",
                format!(
                    "`{x} {} {y}` is outside the ints, {} to {}",
                    op.symbol(),
                    i64::MIN,
                    u64::MAX
                ),
            )
        })
    }

    /// Refuses a division by zero and a shift by other than 0 to 63.
    fn right_operand_fits(&self, span: Span, op: BinOp, y: i128) -> Res<()> {
        use BinOp::*;
        match op {
            Div | Rem if y == 0 => Err(self
                .error(
                    Code::Arithmetic,
                    span,
                    "division by zero",
                    "the right side is 0",
                )
                .with_note(
                    "help: guard the division with an `if`, or change what makes the right side 0",
                )),
            Shl | Shr if !(0..64).contains(&y) => Err(self.error(
                Code::Arithmetic,
                span,
                "shift amount out of range",
                format!("shifting by {y}; use 0 to 63"),
            )),
            _ => Ok(()),
        }
    }
}

/// Python's `//` and `%` for one width of int: `$div` is `x / y` rounded
/// down (`7 / -2` is -4, where Rust's `/` truncates to -3 and Euclid's
/// division gives -3 too), `None` where it overflows (`MIN / -1`); `$rem`
/// is what it leaves, with the sign of `y` (`7 % -2` is -1), which never
/// overflows (`MIN % -1` is 0). `y` is not 0.
macro_rules! floor_division {
    ($div:ident, $rem:ident, $int:ty) => {
        fn $div(x: $int, y: $int) -> Option<$int> {
            let q = x.checked_div(y)?;
            let inexact = x % y != 0;
            Some(if inexact && (x < 0) != (y < 0) {
                q - 1
            } else {
                q
            })
        }

        fn $rem(x: $int, y: $int) -> $int {
            let r = x.wrapping_rem(y);
            if r != 0 && (r < 0) != (y < 0) {
                r + y
            } else {
                r
            }
        }
    };
}

floor_division!(floor_div, floor_mod, i64);
floor_division!(floor_div_wide, floor_mod_wide, i128);

/// `x op y` where `op` compares; `None` for any other operator.
#[inline(always)]
fn compare<T: Ord>(op: BinOp, x: T, y: T) -> Option<bool> {
    use BinOp::*;
    Some(match op {
        Eq => x == y,
        Ne => x != y,
        Lt => x < y,
        Le => x <= y,
        Gt => x > y,
        Ge => x >= y,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{floor_div, floor_mod};

    /// Python's `//` and `%`: the quotient rounded down, the remainder
    /// with the divisor's sign and smaller than it, the two making `x`
    /// again; at the ends of the ints, the one overflow is refused.
    #[test]
    fn division_and_modulo_round_down_as_in_python() {
        for x in -30..=30 {
            for y in (-7..=7).filter(|y| *y != 0) {
                let (q, r) = (floor_div(x, y).expect("no overflow"), floor_mod(x, y));
                assert_eq!(q * y + r, x, "{x} / {y}");
                assert!(r == 0 || (r < 0) == (y < 0), "{x} % {y} is {r}");
                assert!(r.abs() < y.abs(), "{x} % {y} is {r}");
            }
        }
        // Python: 7 // -2 == -4, 7 % -2 == -1, -7 // 2 == -4, -7 % 2 == 1.
        assert_eq!((floor_div(7, -2), floor_mod(7, -2)), (Some(-4), -1));
        assert_eq!((floor_div(-7, 2), floor_mod(-7, 2)), (Some(-4), 1));
        assert_eq!((floor_div(-7, -2), floor_mod(-7, -2)), (Some(3), -1));
        assert_eq!(floor_div(i64::MIN, -1), None);
        assert_eq!(floor_mod(i64::MIN, -1), 0);
        assert_eq!(floor_div(i64::MIN, 1), Some(i64::MIN));
        assert_eq!(floor_mod(i64::MAX, i64::MIN), -1);
    }
}
