//! DynamoDB JSON: attribute values, their wire form, and the lossless mapping from plain JSON.
//!
//! Wire form is what DynamoDB's HTTP API speaks: `{"S":"text"}`, `{"N":"12.5"}`, `{"B":"<base64>"}`,
//! `{"BOOL":true}`, `{"NULL":true}`, `{"M":{..}}`, `{"L":[..]}`, `{"SS":[..]}`, `{"NS":[..]}`,
//! `{"BS":[..]}`. Numbers stay strings, exactly as DynamoDB keeps them.
//!
//! Plain JSON maps onto attribute values one to one, with one rule for numbers DynamoDB cannot
//! hold (more than 38 significant digits, or a magnitude outside 1E-130..1E+126): such a number
//! is stored as a one-element string set holding its literal text, `{"SS":["1e400"]}`. JSON has
//! no sets, so no other JSON value ever becomes an `SS`, and [`to_json`] turns it back into the
//! very same number. Storing it as `N` would fail with a `ValidationException` on every retry.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use crate::decimal::Decimal;
use crate::json::{Json, Number};

/// A DynamoDB item: attribute names to values.
pub type Item = BTreeMap<String, AttributeValue>;

/// One DynamoDB attribute value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeValue {
    /// `S`: a string.
    S(String),
    /// `N`: a number, as DynamoDB's decimal text.
    N(String),
    /// `B`: binary.
    B(Vec<u8>),
    /// `BOOL`.
    Bool(bool),
    /// `NULL`.
    Null,
    /// `M`: a map.
    M(Item),
    /// `L`: a list.
    L(Vec<AttributeValue>),
    /// `SS`: a string set.
    Ss(Vec<String>),
    /// `NS`: a number set.
    Ns(Vec<String>),
    /// `BS`: a binary set.
    Bs(Vec<Vec<u8>>),
}

/// Why a wire value is not a DynamoDB attribute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamoJsonError {
    /// Not an object with exactly one member.
    NotTagged,
    /// The member's name is not a DynamoDB type.
    UnknownType,
    /// The member's value has the wrong JSON type for its tag.
    WrongShape,
    /// An `N` or `NS` element is not a number.
    BadNumber,
    /// A `B` or `BS` element is not base64.
    BadBase64,
}

impl AttributeValue {
    /// The wire form of this value.
    pub fn to_wire(&self) -> Json {
        let strings = |items: &[String]| Json::Array(items.iter().map(|s| Json::string(s)).collect());
        let (tag, inner) = match self {
            AttributeValue::S(s) => ("S", Json::string(s)),
            AttributeValue::N(n) => ("N", Json::string(n)),
            AttributeValue::B(b) => ("B", Json::String(BASE64.encode(b))),
            AttributeValue::Bool(b) => ("BOOL", Json::Bool(*b)),
            AttributeValue::Null => ("NULL", Json::Bool(true)),
            AttributeValue::M(m) => ("M", item_to_wire(m)),
            AttributeValue::L(l) => ("L", Json::Array(l.iter().map(AttributeValue::to_wire).collect())),
            AttributeValue::Ss(s) => ("SS", strings(s)),
            AttributeValue::Ns(n) => ("NS", strings(n)),
            AttributeValue::Bs(b) => ("BS", Json::Array(b.iter().map(|b| Json::String(BASE64.encode(b))).collect())),
        };
        Json::Object(BTreeMap::from([(String::from(tag), inner)]))
    }

    /// Reads a wire value.
    pub fn from_wire(wire: &Json) -> Result<AttributeValue, DynamoJsonError> {
        let Json::Object(map) = wire else { return Err(DynamoJsonError::NotTagged) };
        let mut members = map.iter();
        let (Some((tag, inner)), None) = (members.next(), members.next()) else {
            return Err(DynamoJsonError::NotTagged);
        };
        let string = |v: &Json| v.as_str().map(String::from).ok_or(DynamoJsonError::WrongShape);
        let number = |v: &Json| {
            let s = string(v)?;
            Decimal::parse(&s).map(|_| s).ok_or(DynamoJsonError::BadNumber)
        };
        let binary = |v: &Json| {
            let s = v.as_str().ok_or(DynamoJsonError::WrongShape)?;
            BASE64.decode(s).map_err(|_| DynamoJsonError::BadBase64)
        };
        Ok(match (tag.as_str(), inner) {
            ("S", v) => AttributeValue::S(string(v)?),
            ("N", v) => AttributeValue::N(number(v)?),
            ("B", v) => AttributeValue::B(binary(v)?),
            ("BOOL", Json::Bool(b)) => AttributeValue::Bool(*b),
            ("NULL", Json::Bool(true)) => AttributeValue::Null,
            ("M", v) => AttributeValue::M(item_from_wire(v)?),
            ("L", v) => AttributeValue::L(list(v)?.iter().map(AttributeValue::from_wire).collect::<Result<_, _>>()?),
            ("SS", v) => AttributeValue::Ss(list(v)?.iter().map(string).collect::<Result<_, _>>()?),
            ("NS", v) => AttributeValue::Ns(list(v)?.iter().map(number).collect::<Result<_, _>>()?),
            ("BS", v) => AttributeValue::Bs(list(v)?.iter().map(binary).collect::<Result<_, _>>()?),
            ("BOOL" | "NULL", _) => return Err(DynamoJsonError::WrongShape),
            _ => return Err(DynamoJsonError::UnknownType),
        })
    }

    /// The string of an `S` value.
    pub fn as_s(&self) -> Option<&str> {
        match self {
            AttributeValue::S(s) => Some(s),
            _ => None,
        }
    }

    /// The text of an `N` value.
    pub fn as_n(&self) -> Option<&str> {
        match self {
            AttributeValue::N(n) => Some(n),
            _ => None,
        }
    }
}

/// The elements of a wire list or set.
fn list(v: &Json) -> Result<&[Json], DynamoJsonError> {
    match v {
        Json::Array(items) => Ok(items),
        _ => Err(DynamoJsonError::WrongShape),
    }
}

/// The wire form of an item: `{"name": {"S": ..}, ..}`.
pub fn item_to_wire(item: &Item) -> Json {
    Json::Object(item.iter().map(|(k, v)| (k.clone(), v.to_wire())).collect())
}

/// Reads the wire form of an item.
pub fn item_from_wire(wire: &Json) -> Result<Item, DynamoJsonError> {
    let Json::Object(map) = wire else { return Err(DynamoJsonError::WrongShape) };
    map.iter().map(|(k, v)| Ok((k.clone(), AttributeValue::from_wire(v)?))).collect()
}

/// The largest item DynamoDB stores: 400 KB, attribute names included.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// The size DynamoDB counts for `item`, by its documented rules ("DynamoDB item sizes and
/// formats"): each attribute is the UTF-8 length of its name plus its value's size; a string is
/// its UTF-8 length, binary its raw length, a number 1 byte per two significant digits plus 1,
/// null and booleans 1 byte; a list or map 3 bytes plus 1 byte per element plus its elements
/// (a map's elements counting their names); a set the sum of its elements. Number sizes are
/// "approximately" that in the documentation, so callers keep a margin below
/// [`MAX_ITEM_BYTES`].
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(name, value)| name.len() + value_size(value)).sum()
}

/// The size of one value, without its name (see [`item_size`]).
pub fn value_size(value: &AttributeValue) -> usize {
    let number = |n: &str| Decimal::parse(n).map_or(n.len(), |d| d.digits.len().div_ceil(2) + 1);
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number(n),
        AttributeValue::B(b) => b.len(),
        AttributeValue::Bool(_) | AttributeValue::Null => 1,
        AttributeValue::M(m) => 3 + m.iter().map(|(k, v)| 1 + k.len() + value_size(v)).sum::<usize>(),
        AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::Ss(s) => s.iter().map(String::len).sum(),
        AttributeValue::Ns(n) => n.iter().map(|n| number(n)).sum(),
        AttributeValue::Bs(b) => b.iter().map(Vec::len).sum(),
    }
}

/// Maps plain JSON to an attribute value, losslessly (see the module docs for numbers).
pub fn from_json(value: &Json) -> AttributeValue {
    match value {
        Json::Null => AttributeValue::Null,
        Json::Bool(b) => AttributeValue::Bool(*b),
        Json::Number(n) if n.decimal().fits_dynamodb() => AttributeValue::N(String::from(n.as_str())),
        Json::Number(n) => AttributeValue::Ss(vec![String::from(n.as_str())]),
        Json::String(s) => AttributeValue::S(s.clone()),
        Json::Array(items) => AttributeValue::L(items.iter().map(from_json).collect()),
        Json::Object(map) => AttributeValue::M(map.iter().map(|(k, v)| (k.clone(), from_json(v))).collect()),
    }
}

/// Maps an attribute value back to plain JSON: the inverse of [`from_json`].
///
/// Values [`from_json`] never makes still map to something sensible: binary becomes base64 text,
/// other sets become arrays, and `N` text that is not JSON number syntax (DynamoDB may answer
/// `.5` or `+1`) becomes its canonical JSON form.
pub fn to_json(value: &AttributeValue) -> Json {
    let number = |n: &str| match Number::parse(n) {
        Some(number) => Json::Number(number),
        None => {
            Decimal::parse(n).and_then(|d| Number::parse(&d.canonical())).map_or_else(|| Json::string(n), Json::Number)
        }
    };
    match value {
        AttributeValue::S(s) => Json::String(s.clone()),
        AttributeValue::N(n) => number(n),
        AttributeValue::B(b) => Json::String(BASE64.encode(b)),
        AttributeValue::Bool(b) => Json::Bool(*b),
        AttributeValue::Null => Json::Null,
        AttributeValue::M(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        AttributeValue::L(l) => Json::Array(l.iter().map(to_json).collect()),
        AttributeValue::Ss(s) => match s.as_slice() {
            [only] if Number::parse(only).is_some_and(|n| !n.decimal().fits_dynamodb()) => number(only),
            _ => Json::Array(s.iter().map(|s| Json::string(s)).collect()),
        },
        AttributeValue::Ns(n) => Json::Array(n.iter().map(|n| number(n)).collect()),
        AttributeValue::Bs(b) => Json::Array(b.iter().map(|b| Json::String(BASE64.encode(b))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Fixture: plain JSON and its DynamoDB wire form, side by side.
    const FIXTURE: &str = include_str!("../tests/fixtures/dynamo_json.json");

    #[wasm_bindgen_test(unsupported = test)]
    fn fixture_cases_map_both_ways() {
        let cases = parse(FIXTURE.as_bytes()).unwrap();
        let Json::Array(cases) = cases else { panic!("fixture is an array") };
        assert!(cases.len() >= 8);
        for case in cases {
            let (plain, wire) = (case.get("json").unwrap(), case.get("wire").unwrap());
            let attribute = from_json(plain);
            assert_eq!(&attribute.to_wire(), wire, "encoding {}", plain.to_text());
            assert_eq!(AttributeValue::from_wire(wire), Ok(attribute.clone()));
            assert_eq!(&to_json(&attribute), plain);
        }
    }

    fn check_wire(wire: &str, expected: Result<AttributeValue, DynamoJsonError>) {
        let got = AttributeValue::from_wire(&parse(wire.as_bytes()).unwrap());
        assert_eq!(got, expected, "{wire}");
        if let Ok(value) = got {
            assert_eq!(AttributeValue::from_wire(&value.to_wire()), Ok(value));
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn every_wire_type_reads_and_writes() {
        use AttributeValue as A;
        check_wire(r#"{"B":"AAEC"}"#, Ok(A::B(vec![0, 1, 2])));
        check_wire(r#"{"BS":["AA==","AQ=="]}"#, Ok(A::Bs(vec![vec![0], vec![1]])));
        check_wire(r#"{"NS":["1","-2.5E+3"]}"#, Ok(A::Ns(vec!["1".into(), "-2.5E+3".into()])));
        check_wire(r#"{"SS":["a","b"]}"#, Ok(A::Ss(vec!["a".into(), "b".into()])));
        check_wire(r#"{"N":".5"}"#, Ok(A::N(".5".into())));
        check_wire(r#"{"NULL":true}"#, Ok(A::Null));
        check_wire(r#"{"NULL":false}"#, Err(DynamoJsonError::WrongShape));
        check_wire(r#"{"BOOL":"true"}"#, Err(DynamoJsonError::WrongShape));
        check_wire(r#"{"N":"abc"}"#, Err(DynamoJsonError::BadNumber));
        check_wire(r#"{"N":5}"#, Err(DynamoJsonError::WrongShape));
        check_wire(r#"{"B":"***"}"#, Err(DynamoJsonError::BadBase64));
        check_wire(r#"{"X":"1"}"#, Err(DynamoJsonError::UnknownType));
        check_wire(r#"{"S":"a","N":"1"}"#, Err(DynamoJsonError::NotTagged));
        check_wire(r#"{}"#, Err(DynamoJsonError::NotTagged));
        check_wire(r#"["S"]"#, Err(DynamoJsonError::NotTagged));
        check_wire(r#"{"L":{}}"#, Err(DynamoJsonError::WrongShape));
        check_wire(r#"{"M":{"a":{"Q":1}}}"#, Err(DynamoJsonError::UnknownType));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn item_sizes_follow_the_documented_rules() {
        use AttributeValue as A;
        let one = |name: &str, value: A| item_size(&Item::from([(String::from(name), value)]));
        assert_eq!(one("pk", A::S("abc".into())), 5);
        assert_eq!(one("é", A::S("日本".into())), 2 + 6);
        assert_eq!(one("n", A::N("0".into())), 1 + 1);
        assert_eq!(one("n", A::N("7".into())), 1 + 2);
        assert_eq!(one("n", A::N("12".into())), 1 + 2);
        assert_eq!(one("n", A::N("123".into())), 1 + 3);
        assert_eq!(one("n", A::N("-0012300.00".into())), 1 + 3, "leading and trailing zeros trimmed");
        assert_eq!(one("n", A::N("1".repeat(38))), 1 + 20);
        assert_eq!(one("b", A::B(vec![0; 10])), 11);
        assert_eq!(one("t", A::Bool(true)), 2);
        assert_eq!(one("z", A::Null), 2);
        assert_eq!(one("m", A::M(Item::new())), 4);
        assert_eq!(one("l", A::L(vec![])), 4);
        // 3 + per element (1 + name + value).
        assert_eq!(one("m", A::M(Item::from([("ab".into(), A::S("xyz".into()))]))), 1 + 3 + (1 + 2 + 3));
        assert_eq!(one("l", A::L(vec![A::Bool(true), A::L(vec![])])), 1 + 3 + (1 + 1) + (1 + 3));
        assert_eq!(one("s", A::Ss(vec!["ab".into(), "c".into()])), 1 + 3);
        assert_eq!(one("s", A::Ns(vec!["12".into(), "345".into()])), 1 + 2 + 3);
        assert_eq!(one("s", A::Bs(vec![vec![1, 2], vec![3]])), 1 + 3);
        let two = Item::from([("a".into(), A::S("x".into())), ("bb".into(), A::Bool(false))]);
        assert_eq!(item_size(&two), 2 + 3);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn foreign_values_map_to_sensible_json() {
        use AttributeValue as A;
        assert_eq!(to_json(&A::N(".5".into())).to_text(), "5e-1");
        assert_eq!(to_json(&A::B(vec![0, 1, 2])).to_text(), r#""AAEC""#);
        assert_eq!(to_json(&A::Ss(vec!["12".into()])).to_text(), r#"["12"]"#);
        assert_eq!(to_json(&A::Ns(vec!["1".into(), "2".into()])).to_text(), "[1,2]");
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod cross_checks {
    //! Our codec against `serde_dynamo`, the library the Lambda event types use.
    use super::*;
    use crate::json::parse;
    use alloc::string::ToString;
    use proptest::prelude::*;

    fn to_serde(json: &Json) -> serde_json::Value {
        serde_json::from_str(&json.to_text()).unwrap()
    }

    fn agrees_with_serde_dynamo(value: &serde_json::Value) {
        let ours = from_json(&parse(value.to_string().as_bytes()).unwrap());
        let theirs: serde_dynamo::AttributeValue = serde_dynamo::to_attribute_value(value).unwrap();
        // Encoding: our wire text reads back as the same serde_dynamo value.
        let ours_read: serde_dynamo::AttributeValue = serde_json::from_value(to_serde(&ours.to_wire())).unwrap();
        assert_eq!(ours_read, theirs, "{value}");
        // Decoding: serde_dynamo's wire text reads back as ours.
        let theirs_wire = serde_json::to_string(&theirs).unwrap();
        let decoded = AttributeValue::from_wire(&parse(theirs_wire.as_bytes()).unwrap()).unwrap();
        assert_eq!(decoded, ours);
        let back: serde_json::Value = serde_dynamo::from_attribute_value(theirs).unwrap();
        assert_eq!(&to_serde(&to_json(&decoded)), &back);
    }

    fn json_strategy() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(serde_json::Value::from),
            "\\PC{0,10}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[a-z]{1,5}", inner, 0..5)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn fixed_values_agree() {
        agrees_with_serde_dynamo(&serde_json::json!({"a": [1, "x", null, true, {"b": -7}], "c": {}}));
    }

    proptest! {
        #[test]
        fn agrees_with_serde_dynamo_on_json(value in json_strategy()) {
            agrees_with_serde_dynamo(&value);
        }

        #[test]
        fn json_round_trips_through_attribute_values(
            numbers in prop::collection::vec("-?(0|[1-9][0-9]{0,50})(\\.[0-9]{1,45})?([eE][+-]?[0-9]{1,3})?", 0..8),
            text in "\\PC{0,16}",
        ) {
            let doc = alloc::format!("{{\"n\":[{}],\"s\":{}}}", numbers.join(","), serde_json::to_string(&text).unwrap());
            let json = parse(doc.as_bytes()).unwrap();
            let attribute = from_json(&json);
            let wire = attribute.to_wire().to_text();
            let read = AttributeValue::from_wire(&parse(wire.as_bytes()).unwrap()).unwrap();
            prop_assert_eq!(&read, &attribute);
            prop_assert_eq!(to_json(&read), json);
        }
    }
}
