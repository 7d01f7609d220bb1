//! Instruction patterns used by `asm_tests/expect.toml`.
//!
//! A pattern is whitespace-separated words (tabs count as spaces, case is
//! ignored):
//!
//! * the first word is matched against the whole mnemonic, where `*`
//!   matches anything: `sqrdmulh`, `ld1*`, `*` (any instruction);
//! * every further word must occur somewhere in the operands, where `*`
//!   matches a run of characters within one operand (no space or comma):
//!   `v*.4s`, `.16b`, `panic`. The operands include the symbol of any
//!   relocation on the instruction, so `bl panic` finds calls into
//!   `core::panicking`.
//!
//! So `sqrdmulh v*.4s` matches `sqrdmulh v0.4s, v1.4s, v2.4s` but not
//! `sqrdmulh v0.8h, v1.8h, v2.8h`.

use std::fmt;

/// One disassembled instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    pub mnemonic: String,
    /// Operand text, plus `<reloc SYMBOL>` for each relocation on it.
    pub operands: String,
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operands.is_empty() {
            f.write_str(&self.mnemonic)
        } else {
            write!(f, "{:<10} {}", self.mnemonic, self.operands)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    mnemonic: String,
    operands: Vec<String>,
}

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let lower = text.to_lowercase();
        let mut words = lower.split_whitespace().map(str::to_owned);
        let mnemonic = words
            .next()
            .ok_or_else(|| "empty instruction pattern".to_string())?;
        Ok(Pattern {
            mnemonic,
            operands: words.collect(),
        })
    }

    pub fn matches(&self, insn: &Insn) -> bool {
        let operands = insn.operands.to_lowercase();
        glob_whole(
            self.mnemonic.as_bytes(),
            insn.mnemonic.to_lowercase().as_bytes(),
        ) && self
            .operands
            .iter()
            .all(|word| glob_anywhere(word.as_bytes(), operands.as_bytes()))
    }
}

/// `*` matches any sequence; the whole of `text` must match.
fn glob_whole(pat: &[u8], text: &[u8]) -> bool {
    match pat.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| glob_whole(rest, &text[i..])),
        Some((&c, rest)) => text.first() == Some(&c) && glob_whole(rest, &text[1..]),
    }
}

/// Does `pat` match a substring of `text`, with `*` matching a run of
/// characters other than space and comma?
fn glob_anywhere(pat: &[u8], text: &[u8]) -> bool {
    (0..=text.len()).any(|start| glob_prefix(pat, &text[start..]))
}

/// Does `pat` match a prefix of `text`?
fn glob_prefix(pat: &[u8], text: &[u8]) -> bool {
    match pat.split_first() {
        None => true,
        Some((b'*', rest)) => {
            let run = text.iter().take_while(|&&c| c != b' ' && c != b',').count();
            (0..=run).any(|i| glob_prefix(rest, &text[i..]))
        }
        Some((&c, rest)) => text.first() == Some(&c) && glob_prefix(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(mnemonic: &str, operands: &str) -> Insn {
        Insn {
            mnemonic: mnemonic.into(),
            operands: operands.into(),
        }
    }

    fn matches(pattern: &str, insn: &Insn) -> bool {
        Pattern::parse(pattern).unwrap().matches(insn)
    }

    #[test]
    fn mnemonic_only() {
        let i = insn("sqrdmulh", "v0.4s, v1.4s, v2.4s");
        assert!(matches("sqrdmulh", &i));
        assert!(matches("SQRDMULH", &i));
        assert!(matches("sqrd*", &i));
        assert!(matches("*", &i));
        assert!(!matches("sqrdmul", &i));
        assert!(!matches("mul", &i));
    }

    #[test]
    fn operand_words() {
        let i = insn("sqrdmulh", "v0.4s, v1.4s, v12.4s");
        assert!(matches("sqrdmulh v*.4s", &i));
        assert!(matches("sqrdmulh\tv12.4s", &i));
        assert!(matches("sqrdmulh .4s v0", &i));
        assert!(!matches("sqrdmulh v*.8h", &i));
        assert!(!matches("sqrdmulh v*v1", &i), "* stays within one operand");
        assert!(matches(
            "ld1* {v*.16b}",
            &insn("ld1", "{v0.16b}, [x0], #16")
        ));
    }

    #[test]
    fn relocations_are_searchable() {
        let call = insn(
            "bl",
            "0 <core::panicking::panic_bounds_check> <reloc core::panicking::panic_bounds_check>",
        );
        assert!(matches("bl panic", &call));
        assert!(matches("* panic", &call));
        assert!(!matches("b panic", &call));
    }

    #[test]
    fn empty_pattern_is_an_error() {
        assert!(Pattern::parse("  ").is_err());
    }
}
