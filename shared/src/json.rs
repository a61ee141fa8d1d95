//! A JSON value, parser and writer that keep every number as its exact text.
//!
//! The receiver stores what the sender sent without loss, and DynamoDB numbers are decimal
//! strings, so numbers never pass through `f64` here: [`Number`] holds the literal text and
//! [`crate::decimal::Decimal`] reads its value when one is needed. Objects are `BTreeMap`s, so
//! keys come out sorted (UTF-8 byte order equals code point order), which is what the
//! fingerprint's canonical form wants, and duplicate keys are refused rather than silently
//! resolved one way or the other.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::decimal::Decimal;

/// The deepest nesting [`parse`] accepts in a delivery body. Bodies are stored as JSON text (see
/// `receipt`), so DynamoDB's own nesting limit does not apply to them; the bound is this crate's
/// (the parser and writer recurse once per level) and is kept where it was when bodies were
/// stored as maps, so no body accepted before is refused now.
pub const MAX_DEPTH: usize = 31;

/// The deepest nesting [`parse_wire`] accepts: the DynamoDB wire form of an item whose payload
/// is a map nests two levels per body level (`{"M":{..}}`), plus the item, the attribute and a
/// response or record around it. Receipts written before payloads became text are read with it.
pub const WIRE_MAX_DEPTH: usize = 2 * MAX_DEPTH + 4;

/// A parsed JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, kept as its literal text.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object with unique keys.
    Object(BTreeMap<String, Json>),
}

/// A JSON number literal, exactly as written (always valid JSON number syntax).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Number(String);

/// Why bytes are not an acceptable JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonError {
    /// The bytes are not valid UTF-8.
    NotUtf8,
    /// The text is not JSON; `offset` is the byte where reading stopped.
    Syntax {
        /// Byte offset of the first character that could not be read.
        offset: usize,
    },
    /// Arrays and objects nest deeper than [`MAX_DEPTH`].
    TooDeep,
    /// An object names the same key twice.
    DuplicateKey,
}

impl Number {
    /// Accepts `text` if it is a JSON number literal.
    pub fn parse(text: &str) -> Option<Number> {
        let len = scan_number(text.as_bytes(), 0)?;
        (len == text.len()).then(|| Number(String::from(text)))
    }

    /// A number from a signed integer.
    pub fn from_i64(n: i64) -> Number {
        let mut s = String::new();
        let _ = write!(s, "{n}");
        Number(s)
    }

    /// The literal text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The decimal value of the literal.
    pub fn decimal(&self) -> Decimal {
        // Every Number holds valid JSON number syntax, which Decimal always reads.
        Decimal::parse(&self.0).unwrap_or_default()
    }
}

impl Json {
    /// The member `key` when `self` is an object holding it.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(map) => map.get(key),
            _ => None,
        }
    }

    /// The value a JSON Pointer (RFC 6901) names: `""` is the whole value, `/a/0/b~1c` is
    /// member `a`, its element `0`, then member `b/c` (`~1` is `/`, `~0` is `~`). `None` when
    /// the pointer is malformed or names nothing.
    pub fn pointer(&self, pointer: &str) -> Option<&Json> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut current = self;
        for token in pointer.strip_prefix('/')?.split('/') {
            let key;
            let token = if token.contains('~') {
                key = unescape_pointer_token(token)?;
                key.as_str()
            } else {
                token
            };
            current = match current {
                Json::Object(map) => map.get(token)?,
                Json::Array(items) => items.get(array_index(token)?)?,
                _ => return None,
            };
        }
        Some(current)
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// A string value.
    pub fn string(s: &str) -> Json {
        Json::String(String::from(s))
    }

    /// Compact JSON text, numbers as written, keys sorted.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        write_value(self, &mut out, false);
        out
    }

    /// Canonical JSON text: compact, keys sorted, numbers in one normal form (so `1.0`, `1`
    /// and `10e-1` agree). Two values that mean the same data give the same text.
    pub fn to_canonical_text(&self) -> String {
        let mut out = String::new();
        write_value(self, &mut out, true);
        out
    }
}

/// A pointer token with `~1` and `~0` read as `/` and `~`; `None` for any other `~` sequence.
fn unescape_pointer_token(token: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        match c {
            '~' => match chars.next()? {
                '0' => out.push('~'),
                '1' => out.push('/'),
                _ => return None,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// An array index token: `0`, or digits without a leading zero (RFC 6901, section 4).
fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.is_empty() && !token.starts_with('0'));
    if !canonical || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

/// Parses one JSON document from raw bytes, refusing nesting past [`MAX_DEPTH`] and duplicate keys.
///
/// A `\u` escape of a lone UTF-16 surrogate (what `JSON.stringify` writes for a string cut in
/// the middle of an emoji) reads as U+FFFD, the replacement character, as `TextEncoder` and
/// every UTF-8 encoder do: the document is accepted, and the same text always reads the same.
pub fn parse(bytes: &[u8]) -> Result<Json, JsonError> {
    parse_with_depth(bytes, MAX_DEPTH)
}

/// [`parse`] for DynamoDB wire JSON (stored items, store answers, stream images), which nests
/// deeper than the body it holds: refuses nesting past [`WIRE_MAX_DEPTH`].
pub fn parse_wire(bytes: &[u8]) -> Result<Json, JsonError> {
    parse_with_depth(bytes, WIRE_MAX_DEPTH)
}

fn parse_with_depth(bytes: &[u8], max_depth: usize) -> Result<Json, JsonError> {
    let text = core::str::from_utf8(bytes).map_err(|_| JsonError::NotUtf8)?;
    let mut parser = Parser { text, bytes: text.as_bytes(), pos: 0, max_depth };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.syntax());
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    max_depth: usize,
}

impl Parser<'_> {
    fn syntax(&self) -> JsonError {
        JsonError::Syntax { offset: self.pos }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Result<(), JsonError> {
        if self.bytes.get(self.pos) == Some(&byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax())
        }
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json, JsonError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.syntax())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        match self.bytes.get(self.pos) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => {
                let len = scan_number(self.bytes, self.pos).ok_or_else(|| self.syntax())?;
                let text = &self.text[self.pos..self.pos + len];
                self.pos += len;
                Ok(Json::Number(Number(String::from(text))))
            }
            _ => Err(self.syntax()),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > self.max_depth {
            return Err(JsonError::TooDeep);
        }
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b']').is_ok() {
            return Ok(Json::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            if self.eat(b']').is_ok() {
                return Ok(Json::Array(items));
            }
            self.eat(b',')?;
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > self.max_depth {
            return Err(JsonError::TooDeep);
        }
        self.pos += 1;
        let mut map = BTreeMap::new();
        self.skip_ws();
        if self.eat(b'}').is_ok() {
            return Ok(Json::Object(map));
        }
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.syntax());
            }
            let key = self.string()?;
            self.skip_ws();
            self.eat(b':')?;
            self.skip_ws();
            let value = self.value(depth)?;
            if map.insert(key, value).is_some() {
                return Err(JsonError::DuplicateKey);
            }
            self.skip_ws();
            if self.eat(b'}').is_ok() {
                return Ok(Json::Object(map));
            }
            self.eat(b',')?;
        }
    }

    /// Reads a string starting at its opening quote.
    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Only ASCII bytes stop the scan, so both ends are on character boundaries.
            out.push_str(&self.text[start..self.pos]);
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = self.escape()?;
                    out.push(c);
                }
                _ => return Err(self.syntax()),
            }
        }
    }

    fn escape(&mut self) -> Result<char, JsonError> {
        let b = *self.bytes.get(self.pos).ok_or_else(|| self.syntax())?;
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                match first {
                    0xD800..=0xDBFF => match self.low_surrogate() {
                        Some(second) => {
                            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                            char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
                        }
                        None => char::REPLACEMENT_CHARACTER,
                    },
                    // A low surrogate with no high one before it.
                    0xDC00..=0xDFFF => char::REPLACEMENT_CHARACTER,
                    // Every other code below 0x10000 is a scalar value.
                    code => char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
                }
            }
            _ => return Err(JsonError::Syntax { offset: self.pos - 1 }),
        })
    }

    /// Consumes `\uDC00`..`\uDFFF` if it comes next and returns its code; otherwise reads
    /// nothing, so whatever follows a lone high surrogate is read as usual.
    fn low_surrogate(&mut self) -> Option<u32> {
        let rest = self.bytes.get(self.pos..self.pos + 6)?;
        if &rest[..2] != b"\\u" {
            return None;
        }
        let code = rest[2..].iter().try_fold(0u32, |code, &d| Some(code * 16 + (d as char).to_digit(16)?))?;
        (0xDC00..0xE000).contains(&code).then(|| {
            self.pos += 6;
            code
        })
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or_else(|| self.syntax())?;
        let mut code = 0;
        for &d in digits {
            let v = (d as char).to_digit(16).ok_or_else(|| self.syntax())?;
            code = code * 16 + v;
        }
        self.pos += 4;
        Ok(code)
    }
}

/// The length of the JSON number literal starting at `start`, if one does.
fn scan_number(bytes: &[u8], start: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        let from = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > from).then_some(i)
    };
    let mut i = start;
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match bytes.get(i) {
        Some(b'0') => i + 1,
        Some(b'1'..=b'9') => digits(i)?,
        _ => return None,
    };
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        i = digits(i)?;
    }
    Some(i - start)
}

fn write_value(value: &Json, out: &mut String, canonical: bool) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(true) => out.push_str("true"),
        Json::Bool(false) => out.push_str("false"),
        Json::Number(n) if canonical => n.decimal().write_canonical(out),
        Json::Number(n) => out.push_str(n.as_str()),
        Json::String(s) => write_string(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out, canonical);
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out, canonical);
            }
            out.push('}');
        }
    }
}

/// Writes `s` as a JSON string: quotes, backslashes and control characters escaped, the rest
/// as UTF-8.
pub fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len());
    out.push('"');
    // Runs that need no escape are copied whole: only `"`, `\` and controls are escaped, all
    // ASCII, so every cut falls on a character boundary.
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// [`write_string`], with every character outside printable ASCII escaped as `\uXXXX` (a
/// surrogate pair above U+FFFF): for log lines, where a raw line separator, a bidirectional
/// override or an invisible character could make a viewer show what is not there.
pub fn write_ascii_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(input: &str, expected: Result<&str, JsonError>) {
        let got = parse(input.as_bytes()).map(|v| v.to_text());
        assert_eq!(got.as_deref().map_err(|e| *e), expected, "input: {input}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn parses_and_writes_compact_sorted() {
        check(r#" { "b" : [1, 2.50, -0, 1e400], "a": null } "#, Ok(r#"{"a":null,"b":[1,2.50,-0,1e400]}"#));
        check(r#""\u00e9\ud83d\ude00\n\"\\\/""#, Ok("\"é😀\\n\\\"\\\\/\""));
        check("[true,false,{}]", Ok("[true,false,{}]"));
        check("\"\u{1}\"", Err(JsonError::Syntax { offset: 1 }));
        check("\"\\u0001\"", Ok("\"\\u0001\""));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn pointers_name_values_as_rfc_6901_says() {
        // The examples of RFC 6901, section 5.
        let doc =
            parse(br#"{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#)
                .unwrap();
        let at = |p: &str| doc.pointer(p).map(Json::to_text);
        assert_eq!(at(""), Some(doc.to_text()));
        assert_eq!(at("/foo").as_deref(), Some(r#"["bar","baz"]"#));
        assert_eq!(at("/foo/0").as_deref(), Some(r#""bar""#));
        assert_eq!(at("/foo/1").as_deref(), Some(r#""baz""#));
        for (pointer, value) in
            [("/", "0"), ("/a~1b", "1"), ("/c%d", "2"), ("/e^f", "3"), ("/g|h", "4"), ("/i\\j", "5")]
        {
            assert_eq!(at(pointer).as_deref(), Some(value), "{pointer}");
        }
        assert_eq!(at("/k\"l").as_deref(), Some("6"));
        assert_eq!(at("/ ").as_deref(), Some("7"));
        assert_eq!(at("/m~0n").as_deref(), Some("8"));
        // Names nothing, or is not a pointer.
        for pointer in ["foo", "/foo/2", "/foo/01", "/foo/-", "/foo/+1", "/foo/0/x", "/m~2n", "/m~", "/nope", "/a/b"] {
            assert_eq!(at(pointer), None, "{pointer}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn refuses_what_is_not_json() {
        check("", Err(JsonError::Syntax { offset: 0 }));
        check("{} x", Err(JsonError::Syntax { offset: 3 }));
        check("01", Err(JsonError::Syntax { offset: 1 }));
        check("1.", Err(JsonError::Syntax { offset: 0 }));
        check("+1", Err(JsonError::Syntax { offset: 0 }));
        check("[1,]", Err(JsonError::Syntax { offset: 3 }));
        check(r#"{"a":1,}"#, Err(JsonError::Syntax { offset: 7 }));
        check(r#""\x""#, Err(JsonError::Syntax { offset: 2 }));
        check(r#"{"a":1,"a":2}"#, Err(JsonError::DuplicateKey));
        check("nul", Err(JsonError::Syntax { offset: 0 }));
        assert_eq!(parse(b"\"\xff\""), Err(JsonError::NotUtf8));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn lone_surrogates_read_as_the_replacement_character() {
        check(r#""\ud800""#, Ok("\"\u{fffd}\""));
        check(r#""a\ud83d""#, Ok("\"a\u{fffd}\""));
        check(r#""\ude00x""#, Ok("\"\u{fffd}x\""));
        // A high surrogate followed by an escape that is not a low one: both are kept apart.
        check(r#""\ud83d\u0041""#, Ok("\"\u{fffd}A\""));
        check(r#""\ud83d\ud83d\ude00""#, Ok("\"\u{fffd}😀\""));
        check(r#""\ud83d\n""#, Ok("\"\u{fffd}\\n\""));
        check(r#""\ud83d\u00""#, Err(JsonError::Syntax { offset: 9 }));
        check(r#"{"\udfff":1}"#, Ok("{\"\u{fffd}\":1}"));
        // The pair still decodes, in either hex case.
        check(r#""\uD83D\uDE00""#, Ok("\"😀\""));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn depth_is_limited_for_arrays_objects_and_mixes() {
        let nest = |open: &str, close: &str, n: usize| open.repeat(n) + "1" + &close.repeat(n);
        let mixed = |n: usize| {
            let mut text = String::new();
            for i in 0..n {
                text.push_str(if i % 2 == 0 { "{\"k\":" } else { "[" });
            }
            text.push('1');
            for i in (0..n).rev() {
                text.push(if i % 2 == 0 { '}' } else { ']' });
            }
            text
        };
        for make in [&(|n| nest("[", "]", n)) as &dyn Fn(usize) -> String, &|n| nest("{\"a\":", "}", n), &mixed] {
            assert!(parse(make(MAX_DEPTH).as_bytes()).is_ok(), "{}", make(MAX_DEPTH));
            assert_eq!(parse(make(MAX_DEPTH + 1).as_bytes()), Err(JsonError::TooDeep), "{}", make(MAX_DEPTH + 1));
            assert!(parse_wire(make(WIRE_MAX_DEPTH).as_bytes()).is_ok());
            assert_eq!(parse_wire(make(WIRE_MAX_DEPTH + 1).as_bytes()), Err(JsonError::TooDeep));
        }
        // The wire bound in numbers: an old receipt's map payload at MAX_DEPTH (two levels per
        // body level), inside the payload attribute, the item, and a record around it.
        assert_eq!((MAX_DEPTH, WIRE_MAX_DEPTH), (31, 66));
        assert_eq!(parse("[".repeat(100_000).as_bytes()), Err(JsonError::TooDeep));
        assert_eq!(parse("{\"a\":".repeat(100_000).as_bytes()), Err(JsonError::TooDeep));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn every_control_character_is_escaped() {
        for code in 0u32..0x20 {
            let c = char::from_u32(code).unwrap();
            let mut out = String::new();
            write_string(&c.to_string(), &mut out);
            assert!(out.len() > 3 && out.bytes().all(|b| b >= 0x20), "U+{code:04X} written as {out:?}");
            assert_eq!(parse(out.as_bytes()), Ok(Json::String(c.to_string())));
        }
        let mut out = String::new();
        write_string("\u{7f}\u{80}é", &mut out);
        assert_eq!(out, "\"\u{7f}\u{80}é\"");
        // The short escapes where JSON has them (the form every reader knows), `\u` otherwise,
        // with the text around them copied whole.
        let mut out = String::new();
        write_string("a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}", &mut out);
        assert_eq!(out, r#""a\"b\\c\nd\re\tf\bg\fh\u0001i\u001f""#);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn ascii_strings_escape_everything_else_and_read_back() {
        let text = "a\"\\/\n\u{7f}é\u{2028}\u{202e}😀~";
        let mut out = String::new();
        write_ascii_string(text, &mut out);
        assert_eq!(out, r#""a\"\\/\u000a\u007f\u00e9\u2028\u202e\ud83d\ude00~""#);
        assert!(out.bytes().all(|b| (0x20..0x7f).contains(&b)));
        assert_eq!(parse(out.as_bytes()), Ok(Json::String(text.to_string())));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn canonical_text_normalizes_numbers_only() {
        let a = parse(br#"{"x": 1.0, "y": [100, -0.0, 2.5e1], "s": "1.0"}"#).unwrap();
        let b = parse(br#"{"s":"1.0","y":[1e2,0,25],"x":10E-1}"#).unwrap();
        assert_eq!(a.to_canonical_text(), b.to_canonical_text());
        assert_ne!(a.to_text(), b.to_text());
        assert_eq!(a.to_canonical_text(), r#"{"s":"1.0","x":1,"y":[1e2,0,25]}"#);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn number_literals() {
        assert_eq!(Number::parse("-12.5e+3").map(|n| n.as_str().to_string()), Some("-12.5e+3".into()));
        assert_eq!(Number::parse("12 "), None);
        assert_eq!(Number::parse(".5"), None);
        assert_eq!(Number::from_i64(i64::MIN).as_str(), "-9223372036854775808");
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod cross_checks {
    use super::*;
    use proptest::prelude::*;

    /// Our parser agrees with serde_json on what is JSON, and on the value it holds.
    fn agrees_with_serde_json(text: &str) {
        let ours = parse(text.as_bytes());
        let theirs: Result<serde_json::Value, _> = serde_json::from_str(text);
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => {
                let reparsed: serde_json::Value = serde_json::from_str(&ours.to_text()).unwrap();
                assert_eq!(reparsed, theirs, "{text}");
            }
            // serde_json keeps the last of duplicate keys and nests deeper; we refuse both.
            (Err(JsonError::DuplicateKey | JsonError::TooDeep), Ok(_)) => {}
            // serde_json refuses lone surrogates; we read them as U+FFFD.
            (Ok(ours), Err(e)) if ["surrogate", "hex escape"].iter().any(|m| alloc::format!("{e}").contains(m)) => {
                assert!(ours.to_text().contains('\u{fffd}'), "{text}");
            }
            (Err(_), Err(_)) => {}
            (ours, theirs) => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
        }
    }

    #[test]
    fn fixed_cases_agree_with_serde_json() {
        for text in [
            "{}",
            "[]",
            "0",
            "-0",
            "1e5",
            "1E-5",
            "\"a\\u0041\"",
            "[1,[2,[3]]]",
            "{\"a\":{\"b\":[]}}",
            "01",
            "[,]",
            "{\"a\" 1}",
            "tru",
            "\"\\ud83d\"",
            "\"\t\"",
            " [ 1 , 2 ] ",
            "{\"a\":1,\"a\":1}",
        ] {
            agrees_with_serde_json(text);
        }
    }

    fn json_strategy() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(serde_json::Value::from),
            "\\PC{0,12}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn round_trips_serde_json_documents(value in json_strategy()) {
            let text = serde_json::to_string_pretty(&value).unwrap();
            let ours = parse(text.as_bytes()).unwrap();
            prop_assert_eq!(parse(ours.to_text().as_bytes()).unwrap(), ours.clone());
            let back: serde_json::Value = serde_json::from_str(&ours.to_text()).unwrap();
            prop_assert_eq!(back, value);
        }

        #[test]
        fn arbitrary_text_agrees_with_serde_json(text in "[\\[\\]{}\",:0-9eE.+\\-a-z\\\\ ]{0,24}") {
            agrees_with_serde_json(&text);
        }
    }
}
