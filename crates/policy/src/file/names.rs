//! The rule node names follow.
//!
//! A name is what an operator types in rules, `parent` keys, `eiffel stats` and
//! reload logs, and what reports print as `root/child/leaf` paths, so it must read
//! the same everywhere it appears: 1 to [`MAX_NAME_CHARS`] characters, each a
//! letter or a digit (any script) or one of [`NAME_PUNCTUATION`]. That excludes
//! `/` (the path separator), whitespace, control characters (U+0000-U+001F,
//! U+007F-U+009F) and invisible format characters (the soft hyphen U+00AD,
//! zero-width spaces and joiners, U+FEFF, bidirectional marks), which would make
//! two names that print alike differ.

/// The longest node name, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// The punctuation a node name may contain besides letters and digits.
pub(crate) const NAME_PUNCTUATION: &str = "-_.:+@#";

/// Why `name` is not a valid node name, or `None` if it is.
pub(crate) fn problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a node name must not be empty".to_string());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Some(format!(
            "a node name has at most {MAX_NAME_CHARS} characters, this one {chars}"
        ));
    }
    let bad = name
        .chars()
        .find(|&c| !(c.is_alphanumeric() || NAME_PUNCTUATION.contains(c)))?;
    Some(format!(
        "a node name may contain only letters, digits and `{NAME_PUNCTUATION}`; it contains {}",
        describe(bad)
    ))
}

/// A character as an error message shows it: visible ASCII quoted, every
/// character by code point (an invisible one could not be seen otherwise).
fn describe(c: char) -> String {
    if c.is_ascii_graphic() {
        format!("`{c}` (U+{:04X})", u32::from(c))
    } else {
        format!("U+{:04X}", u32::from(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass() {
        for n in [
            "root",
            "a-be0",
            "tenant_1",
            "vidéo",
            "音声",
            "x.y:z+1@#",
            "0",
        ] {
            assert_eq!(problem(n), None, "{n}");
        }
        assert_eq!(problem(&"a".repeat(MAX_NAME_CHARS)), None);
    }

    #[test]
    fn invisible_and_control_characters_are_named() {
        for (c, code) in [
            ('\u{200B}', "U+200B"),
            ('\u{0000}', "U+0000"),
            ('\u{007F}', "U+007F"),
            ('\u{00AD}', "U+00AD"),
            ('\u{FEFF}', "U+FEFF"),
            ('\u{202E}', "U+202E"),
            (' ', "U+0020"),
            ('\t', "U+0009"),
        ] {
            let msg = problem(&format!("a{c}b")).expect("refused");
            assert!(msg.contains(code), "{msg}");
        }
        assert!(problem("a/b").unwrap().contains("`/` (U+002F)"));
    }

    #[test]
    fn empty_and_long_names_are_refused() {
        assert!(problem("").unwrap().contains("empty"));
        let long = "é".repeat(MAX_NAME_CHARS + 1);
        assert!(problem(&long).unwrap().contains("at most 64 characters"));
    }
}
