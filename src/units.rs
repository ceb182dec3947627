//! Numbers as people read them: byte counts (`64 MiB`), and the float
//! formats of nccl-tests' tables.

/// `64 MiB`, `1.5 KiB`, `1000 B`: three significant digits at most.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{} {}", sig3(v), UNITS[u])
}

/// `1K`, `64K`, `2M`, `1G`: a size as plan files are named (bytes where
/// it is not a whole number of KiB).
pub fn short_bytes(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (unit, suffix) in UNITS {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// Three significant digits at most, no trailing zeros: 64, 1.5, 12.3.
pub fn sig3(v: f64) -> String {
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// C's `%g`, as nccl-tests prints its average: six significant digits,
/// no trailing zeros.
pub fn g_str(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (5 - magnitude).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// nccl-tests' `getFloatStr`: the most decimals that fit `width`.
pub fn float_str(value: f64, width: usize) -> String {
    for s in [
        format!("{value:.2}"),
        format!("{value:.1}"),
        format!("{value:.0}"),
    ] {
        if s.len() <= width {
            return s;
        }
    }
    if width >= 7 {
        format!("{value:.1e}")
    } else {
        format!("{value:.0e}")
    }
}

/// `n` of a thing, the noun in the plural but for one: "1 rank", "8 ranks".
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `n` with its digits in groups of three: 4,294,967,295.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{float_str, grouped};

    #[test]
    fn digits_group_in_threes() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1024), "1,024");
        assert_eq!(grouped(1_000_000), "1,000,000");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn numbers_take_the_most_decimals_that_fit() {
        assert_eq!(float_str(25.3149, 7), "25.31");
        assert_eq!(float_str(1024.5, 7), "1024.50");
        assert_eq!(float_str(131.006, 6), "131.01");
        assert_eq!(float_str(12345.6, 6), "12346");
        assert_eq!(float_str(0.0, 6), "0.00");
    }

    #[test]
    fn the_average_prints_as_percent_g() {
        assert_eq!(super::g_str(374.6512), "374.651");
        assert_eq!(super::g_str(62.5), "62.5");
        assert_eq!(super::g_str(0.123456789), "0.123457");
        assert_eq!(super::g_str(0.0), "0");
    }
}
