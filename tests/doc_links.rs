//! Every link of the docs reaches its target: a file of this repository,
//! and in a Markdown file, a heading of it (GitHub's anchors: the heading
//! in lower case, its punctuation dropped, spaces made `-`, a repeated
//! heading's anchor numbered `-1`, `-2`, ...). docs/ stands alone: a link
//! that leads nowhere strands its reader.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files users read: the README, docs/ and the editors' notes.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("editors/README.md")];
    for dir in ["docs", "editors/vim"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The anchors of the headings of the Markdown file `path`.
fn anchors(path: &Path) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut fenced = false;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let text = heading.trim_start_matches('#').trim().to_lowercase();
        let anchor: String = text
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '_' || *c == '-' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut numbered = anchor.clone();
        let mut n = 0;
        while !found.insert(numbered.clone()) {
            n += 1;
            numbered = format!("{anchor}-{n}");
        }
    }
    found
}

#[test]
fn every_link_of_the_docs_reaches_its_target() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (number, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("](") {
                let rest = &line[at + 2..];
                let Some(end) = rest.find(')') else { continue };
                let link = &rest[..end];
                if link.contains("://") || link.starts_with("mailto:") || link.contains(' ') {
                    continue;
                }
                checked += 1;
                let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
                let target = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let place = format!("{}:{}: {link}", page.display(), number + 1);
                if !target.exists() {
                    broken.push(format!("{place} (no such file)"));
                } else if !anchor.is_empty()
                    && target.extension().is_some_and(|e| e == "md")
                    && !anchors(&target).contains(anchor)
                {
                    broken.push(format!("{place} (no such heading)"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the scan right?"
    );
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}
