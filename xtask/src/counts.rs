//! Passed and failed counts, and reading them from libtest's summary lines.
//! A leaf: `cargo xtask test` sums them over its parts, and the asm checks
//! report in them.

/// Passed/failed counts of a suite, a part of one, or a check.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
}

impl Counts {
    pub fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
    }
}

/// Sums every libtest summary line in `output`, e.g.
/// `test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; ...` or
/// `test result: FAILED. 3 passed; 1 failed; ...`.
pub fn sum_results(output: &str) -> Counts {
    let mut total = Counts::default();
    for line in output.lines() {
        if let Some(counts) = parse_result_line(&strip_ansi(line)) {
            total.add(counts);
        }
    }
    total
}

fn parse_result_line(line: &str) -> Option<Counts> {
    let rest = line.trim().strip_prefix("test result: ")?;
    // Skip the verdict (`ok.` / `FAILED.`), then read `N word` fields.
    let (_, fields) = rest.split_once(". ")?;
    let mut counts = Counts::default();
    let mut seen = false;
    for field in fields.split(';') {
        let mut words = field.split_whitespace();
        let (Some(number), Some(word)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = number.parse::<u64>() else {
            continue;
        };
        match word {
            "passed" => counts.passed = n,
            "failed" => counts.failed = n,
            _ => continue,
        }
        seen = true;
    }
    seen.then_some(counts)
}

/// Removes ANSI colour sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(passed: u64, failed: u64) -> Counts {
        Counts { passed, failed }
    }

    #[test]
    fn parses_ok_and_failed_lines() {
        assert_eq!(
            parse_result_line(
                "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; \
                 0 filtered out; finished in 0.01s"
            ),
            Some(counts(12, 0))
        );
        assert_eq!(
            parse_result_line("test result: FAILED. 3 passed; 2 failed; 0 ignored"),
            Some(counts(3, 2))
        );
        assert_eq!(parse_result_line("running 3 tests"), None);
        assert_eq!(parse_result_line("test foo ... ok"), None);
    }

    #[test]
    fn sums_all_result_lines_and_ignores_colour() {
        let output = "\
running 2 tests
test a ... ok
test b ... FAILED
test result: \u{1b}[31mFAILED\u{1b}[0m. 1 passed; 1 failed; 0 ignored; 0 measured
   Doc-tests qneon
test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
";
        assert_eq!(sum_results(output), counts(5, 1));
        assert_eq!(sum_results("error[E0425]: cannot find value"), counts(0, 0));
    }
}
