//! Reads `asm_tests/expect.toml`.
//!
//! Only the small TOML subset that file needs is understood: comments,
//! `[[kernel]]` and `[[exempt]]` headers, and `key = "string"` / `key = ["string", ...]`
//! (arrays may span lines and end with a comma; strings may be `"basic"`
//! with `\" \\ \t \n` escapes, or `'literal'`). Anything else is reported
//! with its line number.

use std::fmt;

/// One `[[kernel]]` entry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Substring of the (demangled) function name to check.
    pub symbol: String,
    /// Patterns that must each match at least one instruction.
    pub must_contain: Vec<String>,
    /// Patterns that must match no instruction.
    pub must_not_contain: Vec<String>,
    /// The element type the kernel runs on (`i8`, `u8`, `i16`, `f32`, ...),
    /// for the cycles per element of `cargo xtask bench --mca` when the
    /// name does not end in it (kernels generic over the signedness).
    pub element: Option<String>,
    /// The rows of `qneon::catalogue` (`"op type method"`, `*` for any one
    /// word) whose NEON code this function is.
    pub covers: Vec<String>,
    /// Line of the `[[kernel]]` header, for messages.
    pub line: usize,
}

/// One `[[exempt]]` entry: catalogue rows with no expectation, and why.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Exempt {
    /// The rows, as in [`Kernel::covers`].
    pub covers: Vec<String>,
    pub reason: String,
    /// Line of the `[[exempt]]` header, for messages.
    pub line: usize,
}

/// The whole file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Expectations {
    pub kernels: Vec<Kernel>,
    pub exempt: Vec<Exempt>,
}

/// Which table the keys being read belong to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Table {
    Kernel,
    Exempt,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

enum Value {
    Str(String),
    List(Vec<String>),
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    line: usize,
}

pub fn parse(text: &str) -> Result<Expectations, ParseError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
    };
    let mut file = Expectations::default();
    let mut table = None;
    let mut seen_keys: Vec<String> = Vec::new();
    loop {
        p.skip_blank(true);
        let Some(c) = p.peek() else { break };
        if c == '[' {
            let line = p.line;
            let t = p.header()?;
            match t {
                Table::Kernel => file.kernels.push(Kernel {
                    line,
                    ..Kernel::default()
                }),
                Table::Exempt => file.exempt.push(Exempt {
                    line,
                    ..Exempt::default()
                }),
            }
            table = Some(t);
            seen_keys.clear();
            continue;
        }
        let key_line = p.line;
        let key = p.key()?;
        p.skip_blank(false);
        p.expect('=')?;
        p.skip_blank(false);
        let value = p.value()?;
        p.end_of_line()?;

        if seen_keys.contains(&key) {
            return Err(p.error_at(key_line, format!("`{key}` given twice")));
        }
        let wrong_type =
            |p: &Parser, what: &str| p.error_at(key_line, format!("`{key}` must be {what}"));
        match (table, key.as_str(), value) {
            (None, ..) => {
                return Err(p.error_at(
                    key_line,
                    format!("`{key}` must come after a [[kernel]] or [[exempt]] header"),
                ))
            }
            (Some(Table::Kernel), key, value) => {
                let kernel = file.kernels.last_mut().expect("pushed with the header");
                match (key, value) {
                    ("symbol", Value::Str(s)) => kernel.symbol = s,
                    ("must_contain", Value::List(l)) => kernel.must_contain = l,
                    ("must_not_contain", Value::List(l)) => kernel.must_not_contain = l,
                    ("covers", Value::List(l)) => kernel.covers = l,
                    ("element", Value::Str(s)) => kernel.element = Some(s),
                    ("symbol" | "element", _) => return Err(wrong_type(&p, "a string")),
                    ("must_contain" | "must_not_contain" | "covers", _) => {
                        return Err(wrong_type(&p, "an array of strings"))
                    }
                    _ => {
                        return Err(p.error_at(
                            key_line,
                            format!(
                                "unknown key `{key}` (expected symbol, must_contain, \
                                 must_not_contain, element, covers)"
                            ),
                        ))
                    }
                }
            }
            (Some(Table::Exempt), key, value) => {
                let exempt = file.exempt.last_mut().expect("pushed with the header");
                match (key, value) {
                    ("covers", Value::List(l)) => exempt.covers = l,
                    ("reason", Value::Str(s)) => exempt.reason = s,
                    ("covers", _) => return Err(wrong_type(&p, "an array of strings")),
                    ("reason", _) => return Err(wrong_type(&p, "a string")),
                    _ => {
                        return Err(p.error_at(
                            key_line,
                            format!("unknown key `{key}` in [[exempt]] (expected covers, reason)"),
                        ))
                    }
                }
            }
        }
        seen_keys.push(key);
    }
    for k in &file.kernels {
        if k.symbol.is_empty() {
            return Err(p.error_at(k.line, "[[kernel]] without a `symbol`".into()));
        }
    }
    for e in &file.exempt {
        if e.covers.is_empty() || e.reason.trim().is_empty() {
            return Err(p.error_at(
                e.line,
                "[[exempt]] needs `covers` (the rows) and a `reason`".into(),
            ));
        }
    }
    Ok(file)
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn error_at(&self, line: usize, message: String) -> ParseError {
        ParseError { line, message }
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.line, message.into())
    }

    /// Skips spaces, tabs and comments; newlines too if `newlines`.
    fn skip_blank(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => {}
                '\n' if newlines => {}
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                    continue;
                }
                _ => break,
            }
            self.bump();
        }
    }

    fn expect(&mut self, want: char) -> Result<(), ParseError> {
        match self.peek() {
            Some(c) if c == want => {
                self.bump();
                Ok(())
            }
            Some(c) => Err(self.error(format!("expected `{want}`, found `{c}`"))),
            None => Err(self.error(format!("expected `{want}`, found end of file"))),
        }
    }

    fn end_of_line(&mut self) -> Result<(), ParseError> {
        self.skip_blank(false);
        match self.peek() {
            None => Ok(()),
            Some('\n') => {
                self.bump();
                Ok(())
            }
            Some(c) => Err(self.error(format!("unexpected `{c}` after the value"))),
        }
    }

    fn header(&mut self) -> Result<Table, ParseError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c != '\n' && c != '#') {
            self.bump();
        }
        let header: String = self.chars[start..self.pos].iter().collect();
        let table = match header.trim() {
            "[[kernel]]" => Table::Kernel,
            "[[exempt]]" => Table::Exempt,
            other => {
                return Err(self.error(format!(
                "unsupported table `{other}` (only [[kernel]] and [[exempt]] entries are allowed)"
            )))
            }
        };
        self.end_of_line()?;
        Ok(table)
    }

    fn key(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.bump();
        }
        if start == self.pos {
            let found = self
                .peek()
                .map_or("end of file".into(), |c| format!("`{c}`"));
            return Err(self.error(format!("expected a key, found {found}")));
        }
        Ok(self.chars[start..self.pos].iter().collect())
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some('[') => self.list().map(Value::List),
            Some('"' | '\'') => self.string().map(Value::Str),
            _ => Err(self.error("expected a \"string\" or an [array]")),
        }
    }

    fn list(&mut self) -> Result<Vec<String>, ParseError> {
        self.expect('[')?;
        let mut items = Vec::new();
        loop {
            self.skip_blank(true);
            if self.peek() == Some(']') {
                self.bump();
                return Ok(items);
            }
            items.push(self.string()?);
            self.skip_blank(true);
            match self.bump() {
                Some(',') => {}
                Some(']') => return Ok(items),
                _ => return Err(self.error("expected `,` or `]` in array")),
            }
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let quote = match self.peek() {
            Some(q @ ('"' | '\'')) => q,
            _ => return Err(self.error("expected a string")),
        };
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(self.error("unterminated string")),
                Some(c) if c == quote => return Ok(out),
                Some('\\') if quote == '"' => {
                    let escaped = match self.bump() {
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some('t') => '\t',
                        Some('n') => '\n',
                        other => {
                            let shown = other.map_or(String::new(), String::from);
                            return Err(self.error(format!(
                                "unsupported escape `\\{shown}` (use \\\" \\\\ \\t \\n)"
                            )));
                        }
                    };
                    out.push(escaped);
                }
                Some(c) => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_comment_only_files_have_no_kernels() {
        assert_eq!(parse(""), Ok(Expectations::default()));
        assert_eq!(
            parse("# [[kernel]]\n# symbol = \"x\"\n"),
            Ok(Expectations::default())
        );
    }

    #[test]
    fn parses_entries() {
        let text = r#"
# leading comment
[[kernel]]
symbol = "qneon_neon_softmax_i8"   # trailing comment
must_contain = [
    "sqrdmulh v*.4s",  # comment in an array
    'bl\tpanic',
]

[[kernel]]
symbol = 'logistic'
must_not_contain = ["bl\tpanic"]
element = "u8"
covers = ["logistic uint8 *"]

[[exempt]]
covers = ["tanh f32 float"]
reason = "why"
"#;
        let file = parse(text).unwrap();
        assert_eq!(
            file.exempt,
            [Exempt {
                covers: vec!["tanh f32 float".into()],
                reason: "why".into(),
                line: 16
            }]
        );
        let kernels = file.kernels;
        assert_eq!(kernels[1].covers, ["logistic uint8 *"]);
        assert!(kernels[0].covers.is_empty());
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[0].symbol, "qneon_neon_softmax_i8");
        assert_eq!(kernels[0].line, 3);
        assert_eq!(kernels[0].must_contain, ["sqrdmulh v*.4s", r"bl\tpanic"]);
        assert!(kernels[0].must_not_contain.is_empty());
        assert_eq!(kernels[1].symbol, "logistic");
        assert_eq!(kernels[1].must_not_contain, ["bl\tpanic"]);
        assert_eq!(kernels[0].element, None);
        assert_eq!(kernels[1].element.as_deref(), Some("u8"));
    }

    #[test]
    fn reports_mistakes_with_line_numbers() {
        let err = |text: &str| parse(text).unwrap_err();
        assert_eq!(err("symbol = \"x\"").line, 1);
        assert_eq!(err("[[kernel]]\nsymbol = \"x\"\nsymbol = \"y\"").line, 3);
        assert!(err("[[kernel]]\nsymbol = \"x\"\nmust = []")
            .message
            .contains("unknown key"));
        assert!(err("[[kernel]]\nmust_contain = [\"a\"]")
            .message
            .contains("symbol"));
        assert!(err("[kernel]\n").message.contains("unsupported table"));
        assert!(err("[[kernel]]\nsymbol = \"x")
            .message
            .contains("unterminated"));
        assert!(err("[[kernel]]\nsymbol = [\"x\"]")
            .message
            .contains("string"));
        assert!(err("[[exempt]]\ncovers = [\"a b c\"]")
            .message
            .contains("reason"));
        assert!(err("[[exempt]]\nsymbol = \"x\"")
            .message
            .contains("unknown key"));
        assert!(err("[[kernel]]\nsymbol = \"x\" junk")
            .message
            .contains("after the value"));
    }
}
