//! One argv word as the operating system has it: bytes, not necessarily UTF-8. Arguments reach
//! the child unchanged, and a run document records them losslessly: a UTF-8 argument is a plain
//! JSON string (so documents stay as they were), any other is `{"bytes_hex": "…", "lossy": "…"}`
//! (`lossy` is for people; reading uses `bytes_hex` alone).

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An argv word. Backends look at it as text with [`Arg::to_str`] (None for the odd argument
/// that is not UTF-8) and pass it on as it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Arg(OsString);

impl Arg {
    pub fn as_os_str(&self) -> &OsStr {
        &self.0
    }

    pub fn into_os_string(self) -> OsString {
        self.0
    }

    /// The argument as text, when it is UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        self.0.to_str()
    }

    /// The argument as text, invalid bytes replaced by U+FFFD (for messages and display).
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        self.0.to_string_lossy()
    }

    /// The raw bytes (Unix); elsewhere the UTF-8 (lossy) form.
    pub fn as_bytes(&self) -> Cow<'_, [u8]> {
        #[cfg(unix)]
        {
            Cow::Borrowed(std::os::unix::ffi::OsStrExt::as_bytes(self.0.as_os_str()))
        }
        #[cfg(not(unix))]
        match self.to_string_lossy() {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        }
    }

    /// An argument from raw bytes (Unix); elsewhere invalid UTF-8 is replaced.
    pub fn from_bytes(bytes: Vec<u8>) -> Arg {
        #[cfg(unix)]
        {
            Arg(std::os::unix::ffi::OsStringExt::from_vec(bytes))
        }
        #[cfg(not(unix))]
        Arg(String::from_utf8_lossy(&bytes).into_owned().into())
    }
}

/// Text for every argument of `argv`, lossy (for messages, `shlex` display, comparisons).
pub fn lossy(argv: &[Arg]) -> Vec<String> {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Arguments from text.
pub fn args<I, S>(words: I) -> Vec<Arg>
where
    I: IntoIterator<Item = S>,
    S: Into<Arg>,
{
    words.into_iter().map(Into::into).collect()
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl From<String> for Arg {
    fn from(text: String) -> Self {
        Arg(text.into())
    }
}

impl From<&str> for Arg {
    fn from(text: &str) -> Self {
        Arg(text.into())
    }
}

impl From<&String> for Arg {
    fn from(text: &String) -> Self {
        Arg(text.into())
    }
}

impl From<OsString> for Arg {
    fn from(raw: OsString) -> Self {
        Arg(raw)
    }
}

impl From<&OsString> for Arg {
    fn from(raw: &OsString) -> Self {
        Arg(raw.clone())
    }
}

impl From<&Arg> for Arg {
    fn from(arg: &Arg) -> Self {
        arg.clone()
    }
}

impl From<&OsStr> for Arg {
    fn from(raw: &OsStr) -> Self {
        Arg(raw.to_owned())
    }
}

impl From<Arg> for OsString {
    fn from(arg: Arg) -> Self {
        arg.0
    }
}

impl AsRef<OsStr> for Arg {
    fn as_ref(&self) -> &OsStr {
        &self.0
    }
}

impl PartialEq<str> for Arg {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Arg {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Arg {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl PartialEq<Arg> for &str {
    fn eq(&self, other: &Arg) -> bool {
        other.0 == *self
    }
}

impl PartialEq<Arg> for String {
    fn eq(&self, other: &Arg) -> bool {
        other.0 == self.as_str()
    }
}

/// The JSON form of an argument that is not UTF-8.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawArg {
    /// The argument's bytes, two lowercase hex digits each.
    bytes_hex: String,
    /// The same with invalid bytes replaced by U+FFFD; for people, ignored when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lossy: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ArgForm {
    Text(String),
    Raw(RawArg),
}

impl Serialize for Arg {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.to_str() {
            Some(text) => serializer.serialize_str(text),
            None => {
                let bytes = self.as_bytes();
                RawArg {
                    bytes_hex: bytes.iter().map(|b| format!("{b:02x}")).collect(),
                    lossy: Some(String::from_utf8_lossy(&bytes).into_owned()),
                }
                .serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Arg {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match ArgForm::deserialize(deserializer)? {
            ArgForm::Text(text) => Ok(Arg::from(text)),
            ArgForm::Raw(raw) => decode_hex(&raw.bytes_hex)
                .map(Arg::from_bytes)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "bytes_hex `{}` is not an even number of hex digits",
                        raw.bytes_hex
                    ))
                }),
        }
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

impl schemars::JsonSchema for Arg {
    fn schema_name() -> Cow<'static, str> {
        "Arg".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let raw = generator.subschema_for::<RawArg>();
        schemars::json_schema!({
            "description": "One argv word: a string when it is UTF-8, else its bytes in hex.",
            "anyOf": [{"type": "string"}, raw]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn odd() -> Arg {
        Arg::from_bytes(vec![b'a', 0xff, 0xfe, b'b'])
    }

    #[test]
    fn text_stays_a_plain_string() {
        let arg = Arg::from("--template_params=(16, 32)");
        let json = serde_json::to_string(&arg).unwrap();
        assert_eq!(json, r#""--template_params=(16, 32)""#);
        assert_eq!(serde_json::from_str::<Arg>(&json).unwrap(), arg);
        assert_eq!(arg, "--template_params=(16, 32)");
    }

    #[cfg(unix)]
    #[test]
    fn bytes_round_trip_through_hex() {
        let json = serde_json::to_string(&odd()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["bytes_hex"], "61fffe62");
        assert_eq!(value["lossy"], "a\u{fffd}\u{fffd}b");
        assert_eq!(serde_json::from_str::<Arg>(&json).unwrap(), odd());
        assert_eq!(odd().to_str(), None);
        assert_eq!(&*odd().as_bytes(), b"a\xff\xfeb");
    }

    #[test]
    fn bad_hex_is_an_error_that_says_so() {
        let err = serde_json::from_str::<Arg>(r#"{"bytes_hex":"abc"}"#).unwrap_err();
        assert!(err.to_string().contains("hex"), "{err}");
        assert!(serde_json::from_str::<Arg>(r#"{"bytes_hex":"zz"}"#).is_err());
    }

    #[test]
    fn vectors_compare_with_text() {
        let argv = args(["ncu", "--csv"]);
        assert_eq!(argv, ["ncu", "--csv"]);
        assert_eq!(lossy(&argv), vec!["ncu".to_string(), "--csv".to_string()]);
    }
}
