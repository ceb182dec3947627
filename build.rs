//! Generates the parser from `grammar/mscl.lalrpop` into `$OUT_DIR/mscl.rs`.
fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .emit_rerun_directives(true)
        .process()
        .expect("grammar/mscl.lalrpop failed to generate a parser");
}
