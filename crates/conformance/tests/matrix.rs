//! `docs/CONFORMANCE.md` carries the traceability matrix of the current
//! catalog and specification; regenerate on purpose with
//! `EPIC_BLESS=1 cargo test -p conformance --test matrix`. [CONF-007]

use std::path::Path;

use conformance::{catalog, matrix};

const BEGIN: &str = "<!-- matrix:begin -->\n";
const END: &str = "<!-- matrix:end -->";

/// [CONF-007] The matrix in the docs is current, and no requirement is
/// left both uncovered and unexplained.
#[test]
fn conformance_doc_matrix_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let spec = std::fs::read_to_string(root.join("docs/SPEC.md")).unwrap();
    let doc_path = root.join("docs/CONFORMANCE.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let md = matrix::markdown(&spec, &catalog::builtin());
    assert!(
        !md.contains("NOT COVERED"),
        "requirements neither covered nor explained:\n{}",
        md.lines()
            .filter(|l| l.contains("NOT COVERED"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (head, rest) = doc.split_once(BEGIN).expect("matrix:begin marker");
    let (_, tail) = rest.split_once(END).expect("matrix:end marker");
    let want = format!("{head}{BEGIN}{md}{END}{tail}");
    if std::env::var_os("EPIC_BLESS").is_some() {
        std::fs::write(&doc_path, want).unwrap();
        return;
    }
    assert!(
        doc == want,
        "docs/CONFORMANCE.md's matrix is stale; regenerate with EPIC_BLESS=1 cargo test -p conformance --test matrix"
    );
}
