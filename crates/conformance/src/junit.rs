//! JUnit XML for CI systems: one `<testsuite>` per family, one
//! `<testcase>` per case; a failure lists every failed check with its
//! requirement IDs. [CONF-008]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::report::{CaseStatus, Report};

/// Escapes text for XML attributes and character data.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters, even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The report as JUnit XML.
pub fn to_junit(report: &Report) -> String {
    let mut families: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in report.cases.iter().enumerate() {
        families.entry(c.family.as_str()).or_default().push(i);
    }
    let (_, failed, skipped, errors) = report.counts();
    let total_ms: u64 = report.cases.iter().map(|c| c.millis).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"epic conformance {}\" tests=\"{}\" failures=\"{failed}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{:.3}\">",
        esc(&report.dut),
        report.cases.len(),
        total_ms as f64 / 1000.0
    );
    for (family, idx) in families {
        let cases: Vec<_> = idx.iter().filter_map(|&i| report.cases.get(i)).collect();
        let count = |f: fn(&CaseStatus) -> bool| cases.iter().filter(|c| f(&c.status)).count();
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            esc(family),
            cases.len(),
            count(|s| matches!(s, CaseStatus::Fail)),
            count(|s| matches!(s, CaseStatus::Error(_))),
            count(|s| matches!(s, CaseStatus::Skip(_))),
            cases.iter().map(|c| c.millis).sum::<u64>() as f64 / 1000.0
        );
        for c in cases {
            let _ = write!(
                x,
                "    <testcase classname=\"conformance.{}\" name=\"{}\" time=\"{:.3}\"",
                esc(family),
                esc(&c.name),
                c.millis as f64 / 1000.0
            );
            match &c.status {
                CaseStatus::Pass => x.push_str("/>\n"),
                CaseStatus::Fail => {
                    x.push_str(">\n");
                    let fails: Vec<_> = c.failures().collect();
                    let ids: Vec<&str> = fails
                        .iter()
                        .flat_map(|f| f.requirements.iter().map(String::as_str))
                        .collect();
                    let mut body: Vec<String> = fails.iter().map(|f| f.to_string()).collect();
                    body.extend(c.capture_note());
                    let _ = writeln!(
                        x,
                        "      <failure message=\"{}\" type=\"requirement\">{}</failure>",
                        esc(&format!("violates {}", ids.join(" "))),
                        esc(&body.join("\n"))
                    );
                    x.push_str("    </testcase>\n");
                }
                CaseStatus::Skip(why) => {
                    let _ = writeln!(
                        x,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        esc(why)
                    );
                }
                CaseStatus::Error(e) => {
                    let _ = writeln!(
                        x,
                        ">\n      <error message=\"{}\" type=\"harness\">{}</error>\n    </testcase>",
                        esc(e),
                        esc(&c.capture_note().unwrap_or_default())
                    );
                }
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{Check, Verdict};
    use crate::report::CaseResult;

    /// [CONF-008] Failures carry their requirement IDs; text is escaped.
    #[test]
    fn junit_failures_name_requirements() {
        let fail = Check {
            name: "icrc",
            requirements: vec!["WIRE-071".into()],
            verdict: Verdict::Fail("<bad> & \"worse\"".into()),
        };
        let pass = Check {
            name: "completion",
            requirements: vec!["CTL-016".into()],
            verdict: Verdict::Pass,
        };
        let r = Report::new(
            "reference".into(),
            vec![
                CaseResult::judged("m2-a", "clean", vec![pass.clone()], 3),
                CaseResult::judged("m2-b", "malformed", vec![pass, fail], 4),
            ],
        );
        let x = to_junit(&r);
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(x.contains("violates WIRE-071"), "{x}");
        assert!(x.contains("&lt;bad&gt; &amp; &quot;worse&quot;"), "{x}");
        assert!(!x.contains("<bad>"));
        assert_eq!(r.failed_requirements(), vec!["WIRE-071"]);
    }
}
