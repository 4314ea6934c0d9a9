//! Parsers for the command line's durations, sizes and rates.

use std::time::Duration;

/// "10s", "250ms", "2m", "1.5s", "1h"; a bare number is seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = split_unit(s);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (try 10s, 250ms, 2m)"))?;
    let secs = match unit {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use ms, s, m, h)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("'{s}' is not a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// "64", "16K", "16KiB", "1M", "1.5M" (binary units); bytes.
pub fn size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, unit) = split_unit(s);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (try 64, 16K, 1M)"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use K, M, G)")),
    };
    let b = v * mult;
    if !b.is_finite() || b < 0.0 || b > usize::MAX as f64 {
        return Err(format!("'{s}' is not a size"));
    }
    Ok(b.round() as usize)
}

/// "5000", "5000/s", "5k/s", "2.5k" requests per second.
pub fn rate(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/s");
    let (num, unit) = split_unit(t);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a rate (try 5000/s or 5k/s)"))?;
    let r = match unit {
        "" => v,
        "k" | "K" => v * 1e3,
        "m" | "M" => v * 1e6,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use k or M)")),
    };
    if !r.is_finite() || r <= 0.0 {
        return Err(format!("'{s}': the rate must be above zero"));
    }
    Ok(r)
}

fn split_unit(s: &str) -> (&str, &str) {
    let at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..at], s[at..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("3"), Ok(Duration::from_secs(3)));
        assert!(duration("ten").is_err());
        assert!(duration("5 parsecs").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(size("64"), Ok(64));
        assert_eq!(size("16K"), Ok(16384));
        assert_eq!(size("1MiB"), Ok(1 << 20));
        assert_eq!(size("1.5k"), Ok(1536));
        assert!(size("-1").is_err());
        assert!(size("12 parsecs").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(rate("5000/s"), Ok(5000.0));
        assert_eq!(rate("5k/s"), Ok(5000.0));
        assert_eq!(rate("2.5k"), Ok(2500.0));
        assert!(rate("0").is_err());
        assert!(rate("fast").is_err());
    }
}
