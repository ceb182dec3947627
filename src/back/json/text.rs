//! JSON text as the plan's writer makes it: objects and lists opened and
//! closed, keys, integers and words, compact or indented, each piece's
//! bytes put in with as few copies and tests as the compiler can make of
//! them (the writer's work is most of a large plan's compile).

/// A word of the plan (an op's name, a channel's or buffer's type) as
/// JSON text, quoted, in a block of fixed size: copied as one block and
/// cut to its length, where a word's own bytes, of a length known only as
/// the plan is written, are copied by a call of memcpy (three an op).
pub(super) struct Quoted {
    bytes: [u8; QUOTED_BYTES],
    len: usize,
}

/// The room of a [`Quoted`]: the longest word and its quotes, rounded up.
const QUOTED_BYTES: usize = 32;

pub(super) const fn quote(word: &str) -> Quoted {
    let word = word.as_bytes();
    assert!(word.len() + 2 <= QUOTED_BYTES);
    let mut bytes = [b'"'; QUOTED_BYTES];
    let mut i = 0;
    while i < word.len() {
        bytes[i + 1] = word[i];
        i += 1;
    }
    Quoted {
        bytes,
        len: word.len() + 2,
    }
}

/// JSON text being written: compact, or (`PRETTY`) indented as
/// serde_json's `PrettyFormatter` indents with one space (each element
/// and key on a line of its own; `[]` and `{}` when empty). Which one is a
/// constant of the type, so that the compact writer, nearly all plans',
/// has no test of it at every key.
pub(super) struct Json<const PRETTY: bool> {
    pub(super) text: Vec<u8>,
    /// How many objects and lists are open.
    depth: usize,
    /// Nothing is in the innermost open object or list yet.
    first: bool,
}

impl<const PRETTY: bool> Json<PRETTY> {
    pub(super) fn new(depth: usize) -> Self {
        Json {
            text: Vec::new(),
            depth,
            first: true,
        }
    }

    /// Opens an object (`{`) or a list (`[`).
    #[inline(always)]
    pub(super) fn open(&mut self, bracket: u8) {
        self.text.push(bracket);
        self.depth += 1;
        self.first = true;
    }

    /// Closes what `open` opened: it is then a value of the one around it.
    #[inline(always)]
    pub(super) fn close(&mut self, bracket: u8) {
        self.depth -= 1;
        if PRETTY && !self.first {
            self.new_line();
        }
        self.text.push(bracket);
        self.first = false;
    }

    #[inline(always)]
    fn new_line(&mut self) {
        self.text.push(b'\n');
        self.text.resize(self.text.len() + self.depth, b' ');
    }

    /// Starts the next element of a list, or entry of an object.
    #[inline(always)]
    pub(super) fn element(&mut self) {
        if !self.first {
            self.text.push(b',');
        }
        if PRETTY {
            self.new_line();
        }
        self.first = false;
    }

    /// Starts an entry: `key` is one of the plan's keys (`key!`).
    #[inline(always)]
    pub(super) fn key(&mut self, key: &'static [u8]) {
        if PRETTY {
            self.element();
            self.text.extend_from_slice(&key[1..]);
            self.text.push(b' ');
        } else {
            // (Two copies, each of a length the compiler knows: one of
            // either length is a call of memcpy.)
            match self.first {
                true => self.text.extend_from_slice(&key[1..]),
                false => self.text.extend_from_slice(key),
            }
            self.first = false;
        }
    }

    #[inline(always)]
    pub(super) fn int(&mut self, value: impl itoa::Integer + TryInto<u16>) {
        // Most of a plan's numbers are indices, sizes and ids under ten
        // thousand: their digits go in as bytes of a known count, with no
        // copy of a formatted buffer.
        let digit = |n: u16| b'0' + (n % 10) as u8;
        match value.try_into() {
            Ok(n) if n < 10 => self.text.push(digit(n)),
            Ok(n) if n < 100 => self.text.extend_from_slice(&[digit(n / 10), digit(n)]),
            Ok(n) if n < 1000 => {
                self.text
                    .extend_from_slice(&[digit(n / 100), digit(n / 10), digit(n)])
            }
            Ok(n) if n < 10000 => self.text.extend_from_slice(&[
                digit(n / 1000),
                digit(n / 100),
                digit(n / 10),
                digit(n),
            ]),
            _ => self
                .text
                .extend_from_slice(itoa::Buffer::new().format(value).as_bytes()),
        }
    }

    /// One of msclc's names (of an op, a channel or buffer type, ...),
    /// which need no escapes.
    #[inline(always)]
    pub(super) fn word(&mut self, word: &'static str) {
        debug_assert!(word.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\'));
        self.text.push(b'"');
        self.text.extend_from_slice(word.as_bytes());
        self.text.push(b'"');
    }

    #[inline(always)]
    pub(super) fn int_entry(
        &mut self,
        key: &'static [u8],
        value: impl itoa::Integer + TryInto<u16>,
    ) {
        self.key(key);
        self.int(value);
    }

    /// A word quoted in advance ([`Quoted`]).
    #[inline(always)]
    pub(super) fn quoted(&mut self, word: &Quoted) {
        let end = self.text.len() + word.len;
        self.text.extend_from_slice(&word.bytes);
        self.text.truncate(end);
    }

    #[inline(always)]
    pub(super) fn quoted_entry(&mut self, key: &'static [u8], word: &Quoted) {
        self.key(key);
        self.quoted(word);
    }

    #[inline(always)]
    pub(super) fn word_entry(&mut self, key: &'static [u8], word: &'static str) {
        self.key(key);
        self.word(word);
    }

    /// The program's own text (the plan's name), escaped as serde_json
    /// escapes it.
    pub(super) fn string_entry(&mut self, key: &'static [u8], text: &str) {
        self.key(key);
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.text, text);
    }

    #[inline(always)]
    pub(super) fn bool_entry(&mut self, key: &'static [u8], value: bool) {
        self.key(key);
        self.text
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    #[inline(always)]
    pub(super) fn ints_entry<T: itoa::Integer + TryInto<u16> + Copy>(
        &mut self,
        key: &'static [u8],
        values: &[T],
    ) {
        self.key(key);
        self.open(b'[');
        for &v in values {
            self.element();
            self.int(v);
        }
        self.close(b']');
    }

    /// A list of objects, each written by `entries`.
    #[inline(always)]
    pub(super) fn objects_entry<T>(
        &mut self,
        key: &'static [u8],
        items: &[T],
        mut entries: impl FnMut(&mut Self, &T),
    ) {
        self.key(key);
        self.open(b'[');
        for item in items {
            self.element();
            self.open(b'{');
            entries(self, item);
            self.close(b'}');
        }
        self.close(b']');
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    /// Integers are written as their decimal digits, on both sides of
    /// every count of digits the writer makes by hand.
    #[test]
    fn integers_are_their_digits() {
        for n in [
            0u64,
            9,
            10,
            99,
            100,
            999,
            1000,
            9999,
            10000,
            65535,
            65536,
            u64::MAX,
        ] {
            let mut j = Json::<false>::new(0);
            j.int(n);
            assert_eq!(j.text, n.to_string().into_bytes());
        }
        for n in [-1i64, -10, i64::MIN, 7] {
            let mut j = Json::<false>::new(0);
            j.int(n);
            assert_eq!(j.text, n.to_string().into_bytes());
        }
    }
}
