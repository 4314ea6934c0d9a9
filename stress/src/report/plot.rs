//! `--plot FILE.svg`: the latency percentile curve and throughput over time of one run,
//! or of two runs compared.

use super::Report;
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40)];

/// Draws `runs` (one or two, each with a name) into an SVG file.
pub fn plot(path: &Path, runs: &[(&str, &Report)]) -> Result<(), String> {
    draw(path, runs).map_err(|e| format!("cannot draw {}: {e}", path.display()))
}

/// x = 1/(1-q): 0 % → 1, 90 % → 10, 99 % → 100, 99.9 % → 1000.
fn percentile_x(p: f64) -> Option<f64> {
    (p < 100.0).then(|| 1.0 / (1.0 - p / 100.0))
}

fn percentile_label(x: f64) -> String {
    let p = (1.0 - 1.0 / x) * 100.0;
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn draw(path: &Path, runs: &[(&str, &Report)]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1280, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(660);

    let curves: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|(_, r)| {
            r.latency
                .curve
                .iter()
                .filter_map(|&(p, v)| percentile_x(p).map(|x| (x, v.max(0.1))))
                .collect()
        })
        .collect();
    let all = curves.iter().flatten();
    let ymin = all.clone().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let ymax = all.clone().map(|p| p.1).fold(0.0, f64::max);
    let xmax = all.map(|p| p.0).fold(10.0, f64::max);
    let (ymin, ymax) = if ymin.is_finite() && ymax > 0.0 {
        (ymin / 1.5, ymax * 1.5)
    } else {
        (1.0, 1000.0)
    };
    let mut lat = ChartBuilder::on(&left)
        .caption("Latency by percentile", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((1f64..xmax).log_scale(), (ymin..ymax).log_scale())?;
    lat.configure_mesh()
        .x_desc("percentile")
        .y_desc("latency")
        .x_label_formatter(&|x| percentile_label(*x))
        .y_label_formatter(&|v| super::text::us(*v))
        .draw()?;
    for (i, ((name, _), pts)) in runs.iter().zip(&curves).enumerate() {
        let c = COLORS[i % COLORS.len()];
        lat.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    lat.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;

    let tmax = runs
        .iter()
        .flat_map(|(_, r)| r.timeline.iter().map(|p| p.t_s))
        .fold(1.0, f64::max);
    let rmax = runs
        .iter()
        .flat_map(|(_, r)| r.timeline.iter().map(|p| p.req_per_s))
        .fold(1.0, f64::max);
    let mut thr = ChartBuilder::on(&right)
        .caption("Throughput over time", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..tmax, 0f64..rmax * 1.1)?;
    thr.configure_mesh()
        .x_desc("seconds")
        .y_desc("requests/s")
        .y_label_formatter(&|v| super::text::count(v.round() as u64))
        .draw()?;
    for (i, (name, r)) in runs.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        thr.draw_series(LineSeries::new(
            r.timeline.iter().map(|p| (p.t_s, p.req_per_s)),
            c.stroke_width(2),
        ))?
        .label(*name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    thr.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_axis_labels() {
        assert_eq!(percentile_x(100.0), None);
        assert_eq!(percentile_label(percentile_x(99.0).expect("x")), "99%");
        assert_eq!(percentile_label(percentile_x(99.9).expect("x")), "99.9%");
        assert_eq!(percentile_label(1.0), "0%");
    }
}
