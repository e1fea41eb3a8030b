//! One self-contained HTML file: the page, its script, the worker, the
//! wasm-bindgen glue and the wasm module, and the captures, all inlined, for
//! attaching to a bug report. It opens from disk with no server (the
//! worker runs as a classic script from a blob there).

use std::path::Path;

use super::TraceFile;

/// Writes the page with everything inlined to `out`.
pub(super) fn write(assets: &Path, traces: &[TraceFile], out: &Path) -> Result<(), String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let html = read(&assets.join("index.html"))?;
    let css = read(&assets.join("style.css"))?;
    let app = read(&assets.join("app.js"))?;
    let worker = read(&assets.join("worker.js"))?;
    let glue = read(&assets.join("pkg/inspector.js"))?;
    let wasm = std::fs::read(assets.join("pkg/inspector_bg.wasm"))
        .map_err(|e| format!("{}: {e}", assets.display()))?;
    // The worker, as a classic script (a page opened from disk may not
    // start a module worker from a blob): the glue inlined without its
    // `export`s, and the wasm given as bytes instead of fetched beside it.
    let glue = glue
        .replace("export class ", "class ")
        .replace("export function ", "function ")
        .replace("export { initSync, __wbg_init as default };", "")
        .replace("import.meta.url", "self.location.href");
    let worker = worker.replace(
        "import init, { Inspector } from \"./pkg/inspector.js\";",
        &format!(
            "{glue}\nconst init = () => __wbg_init({{ module_or_path: Uint8Array.from(atob(\"{}\"), (c) => c.charCodeAt(0)) }});",
            base64(&wasm)
        ),
    );
    if worker.contains("import ") && worker.contains(" from \"") {
        return Err(
            "the worker still imports a module: the page and this exporter disagree".into(),
        );
    }
    let traces_js: Vec<String> = traces
        .iter()
        .map(|t| {
            format!(
                "{{name:{},base64:\"{}\"}}",
                serde_json::to_string(&t.name).unwrap_or_else(|_| "\"capture\"".into()),
                base64(&t.bytes)
            )
        })
        .collect();
    let app = app.replace(
        "const worker = new Worker(\"worker.js\", { type: \"module\" });",
        "const worker = new Worker(URL.createObjectURL(new Blob([document.getElementById(\"epic-worker\").textContent], { type: \"text/javascript\" })));",
    );
    let page = html
        .replace(
            "<link rel=\"stylesheet\" href=\"style.css\">",
            &format!("<style>\n{css}\n</style>"),
        )
        .replace(
            "<script type=\"module\" src=\"app.js\"></script>",
            &format!(
                "<script type=\"text/plain\" id=\"epic-worker\">\n{}\n</script>\n<script>window.EPIC_TRACES = [{}];</script>\n<script type=\"module\">\n{app}\n</script>",
                worker.replace("</script", "<\\/script"),
                traces_js.join(",")
            ),
        );
    std::fs::write(out, page).map_err(|e| format!("{}: {e}", out.display()))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
