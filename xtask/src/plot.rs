//! The SVG bar chart of instructions per element (`target/bench/insns.svg`).
//!
//! Drawn with `plotters`' SVG backend and no font features: text becomes
//! SVG `<text>` elements that the viewer renders, so no system fonts (and
//! no fontconfig) are needed to build or run this.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One group of bars: a label and its (series name, value) bars, in order.
pub struct Group {
    pub label: String,
    pub bars: Vec<(&'static str, f64)>,
}

const BAR_HEIGHT: u32 = 9;
const LABEL_WIDTH: u32 = 230;
const WIDTH: u32 = 900;
const COLOURS: [RGBColor; 3] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
];

/// Horizontal bars on a logarithmic axis (NEON and scalar differ by 10-30x),
/// one group per label, the series in the legend. Returns the SVG text.
pub fn bar_chart(title: &str, x_label: &str, groups: &[Group]) -> Result<String, String> {
    let series: Vec<&'static str> = {
        let mut names = Vec::new();
        for (name, _) in groups.iter().flat_map(|g| &g.bars) {
            if !names.contains(name) {
                names.push(*name);
            }
        }
        names
    };
    let positive = || {
        groups
            .iter()
            .flat_map(|g| &g.bars)
            .map(|b| b.1)
            .filter(|v| *v > 0.0)
    };
    let lo = positive().fold(f64::INFINITY, f64::min);
    let hi = positive().fold(0.0, f64::max);
    if !(lo.is_finite() && hi > 0.0) {
        return Err("nothing to plot".into());
    }
    // Whole decades around the data.
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil());

    let per_group = series.len().max(1) as u32 * BAR_HEIGHT + 8;
    let height = 110 + per_group * groups.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let n = groups.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(LABEL_WIDTH)
            .build_cartesian_2d((lo..hi).log_scale(), n..0.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(x_label)
            .x_label_formatter(&|v| format!("{v}"))
            .draw()
            .map_err(err)?;

        let bar = BAR_HEIGHT as f64 / per_group as f64;
        for (k, name) in series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let rects = groups.iter().enumerate().filter_map(|(i, g)| {
                let value = g.bars.iter().find(|b| b.0 == *name)?.1;
                let top = i as f64 + 4.0 / per_group as f64 + k as f64 * bar;
                Some(Rectangle::new(
                    [(lo, top), (value.max(lo), top + bar * 0.9)],
                    colour.filled(),
                ))
            });
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;

        // Group labels, right-aligned against the plotting area.
        let style = ("sans-serif", 12)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, g) in groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(lo, i as f64 + 0.5));
            root.draw(&Text::new(g.label.clone(), (x - 6, y), style.clone()))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_labels_and_bars_as_svg() {
        let groups = vec![
            Group {
                label: "softmax int8 fixed".into(),
                bars: vec![("neon", 13.8), ("scalar", 215.0)],
            },
            Group {
                label: "logistic int8 lut".into(),
                bars: vec![("neon", 0.53), ("scalar", 4.0)],
            },
        ];
        let svg = bar_chart("title", "instructions per element", &groups).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("softmax int8 fixed"));
        assert!(svg.contains("logistic int8 lut"));
        assert!(svg.contains("\nneon\n") && svg.contains("\nscalar\n"));
        // Four bars and the two legend swatches.
        assert!(svg.matches("<rect").count() >= 6);
        assert!(bar_chart("t", "x", &[]).is_err());
    }
}
