//! Grouped bar charts as standalone SVG documents, drawn with `plotters`.
//!
//! The reports draw a few charts of a few dozen bars each: for each
//! category (a design, a pattern) one bar per series (a query, an engine).
//! `plotters` lays out the axes, ticks, legend and text; what is ours is the
//! choice of scale, the palette and the value labels' form (three
//! significant digits). Text is measured by `plotters`' built-in estimate
//! (no font files are read), and the output is a pure function of the
//! inputs — same data, same bytes — so charts can be committed and diffed.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    reason = "pixel sizes and decimal exponents of finite, positive figures of a few dozen bars"
)]

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One named series of values, one value per category (NaN or negative =
/// missing bar; so is an infinite value, a value past the end of `values`,
/// and zero on a log scale).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `values[i]` belongs to `categories[i]`.
    pub values: Vec<f64>,
}

/// Okabe–Ito colours (told apart with the common colour-vision
/// deficiencies), yellow dropped for contrast on white; then Tol's wine and a
/// grey. Series `i` gets `PALETTE[i % len]`.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x88, 0x22, 0x55),
    RGBColor(0x7F, 0x7F, 0x7F),
];
const FONT: &str = "sans-serif";
/// Width of one bar and the gap between categories' groups, px.
const BAR_W: u32 = 34;
const GROUP_GAP: u32 = 24;
const PLOT_H: u32 = 300;
const MIN_PLOT_W: u32 = 360;
/// Room for the legend to the right of the plot, px.
const LEGEND_W: u32 = 200;
/// Estimated width of a character of the category labels, px.
const CHAR_W: u32 = 7;
/// Category labels wider than this turn upright rather than widen their group.
const MAX_LABEL_W: u32 = 180;

/// A grouped bar chart: for each category one bar per series, with a
/// legend, a y axis, value labels above bars (three significant digits),
/// category labels under the groups (turned upright when wider than their
/// group), title and y-axis label. `log_scale` draws a log10 y axis (for
/// latencies spanning µs..s).
///
/// Never panics: no categories or no drawable value give a frame with the
/// title alone.
#[must_use]
pub fn grouped_bars(title: &str, y_label: &str, categories: &[String], series: &[Series], log_scale: bool) -> String {
    let bars: Vec<Bar> = drawn(series, categories.len(), log_scale).collect();
    let layout = Layout::new(categories, series);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (layout.width, layout.height)).into_drawing_area();
        let drawn = root.fill(&WHITE).is_ok()
            && !bars.is_empty()
            && match y_range(&bars, log_scale) {
                YRange::Linear(top) => draw(&root, &layout, title, y_label, categories, series, &bars, 0.0..top),
                YRange::Log(lo, hi) => {
                    draw(&root, &layout, title, y_label, categories, series, &bars, (lo..hi).log_scale())
                }
            };
        if !drawn {
            let _ = root.titled(title, (FONT, 18));
        }
        let _ = root.present();
    }
    out
}

/// A bar to draw: its category, its series and its value.
#[derive(Debug, Clone, Copy)]
struct Bar {
    category: usize,
    series: usize,
    value: f64,
}

/// The bars that will be drawn.
fn drawn(series: &[Series], categories: usize, log: bool) -> impl Iterator<Item = Bar> + '_ {
    series
        .iter()
        .enumerate()
        .flat_map(move |(s, ser)| {
            ser.values.iter().take(categories).enumerate().map(move |(c, &value)| Bar { category: c, series: s, value })
        })
        .filter(move |b| drawable(b.value, log))
}

fn drawable(v: f64, log: bool) -> bool {
    v.is_finite() && if log { v > 0.0 } else { v >= 0.0 }
}

/// The y axis: `0..top`, or the decades `lo..hi` around the values.
enum YRange {
    Linear(f64),
    Log(f64, f64),
}

/// Room above the tallest bar for its label; on a log axis, the decade
/// below the shortest bar so that it still shows.
fn y_range(bars: &[Bar], log: bool) -> YRange {
    let (min, max) = bars.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), b| (lo.min(b.value), hi.max(b.value)));
    if log {
        let lo = 10f64.powf(min.log10().ceil() - 1.0);
        let hi = 10f64.powf((max * 2.0).log10().ceil()).max(lo * 10.0);
        YRange::Log(lo, hi)
    } else {
        YRange::Linear(if max > 0.0 { max * 1.15 } else { 1.0 })
    }
}

/// Sizes in px.
struct Layout {
    width: u32,
    height: u32,
    /// Category labels are turned upright when wider than their group.
    upright: bool,
    /// Room under the plot for the category labels.
    label_h: u32,
}

impl Layout {
    fn new(categories: &[String], series: &[Series]) -> Layout {
        let n_cat = categories.len().max(1) as u32;
        let widest = categories.iter().map(|c| c.chars().count()).max().unwrap_or(0) as u32 * CHAR_W;
        // A group is as wide as its bars, or its label where that fits.
        let bars_w = series.len().max(1) as u32 * BAR_W + GROUP_GAP;
        let upright = widest + GROUP_GAP > bars_w.max(MAX_LABEL_W);
        let group_w = if upright { bars_w } else { bars_w.max(widest + GROUP_GAP) };
        let plot_w = (n_cat * group_w).max(MIN_PLOT_W);
        let label_h = if upright { widest + 16 } else { 28 };
        Layout { width: plot_w + 90 + LEGEND_W, height: PLOT_H + 60 + label_h, upright, label_h }
    }
}

/// Draws the chart on `root` with y axis `y`; false if `plotters` refused.
#[allow(clippy::too_many_arguments, reason = "the chart's parts, passed through from grouped_bars")]
fn draw<Y>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    layout: &Layout,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[Series],
    bars: &[Bar],
    y: Y,
) -> bool
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    // Category `c` spans `c - 0.5 .. c + 0.5`: the axis's whole numbers,
    // where its ticks fall, are the groups' centres.
    let n = categories.len();
    let x = -0.5..n as f64 - 0.5;
    let Ok(mut chart) = ChartBuilder::on(root)
        .caption(title, (FONT, 18))
        .margin(10)
        .margin_right(LEGEND_W)
        .x_label_area_size(layout.label_h)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
    else {
        return false;
    };
    let label = |x: &f64| categories.get(x.round() as usize).cloned().unwrap_or_default();
    let tick = |v: &f64| sig3(*v, true);
    let category_style = if layout.upright {
        (FONT, 12).into_font().transform(FontTransform::Rotate270).into_text_style(root)
    } else {
        (FONT, 12).into_font().into_text_style(root)
    };
    let mesh = chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&label)
        .x_label_style(category_style)
        .y_label_formatter(&tick)
        .y_desc(y_label)
        .draw();
    let base = chart.y_range().start;
    let slot = |b: &Bar| {
        let width = 0.8 / series.len() as f64;
        let left = b.category as f64 - 0.4 + b.series as f64 * width;
        (left, left + width)
    };
    let mut ok = mesh.is_ok();
    for s in 0..series.len() {
        let colour = PALETTE[s % PALETTE.len()];
        let own = bars.iter().filter(|b| b.series == s);
        let rects = own.clone().map(|b| {
            let (x0, x1) = slot(b);
            Rectangle::new([(x0, base), (x1, b.value)], colour.filled())
        });
        ok &= chart.draw_series(rects).is_ok();
        let above = Pos::new(HPos::Center, VPos::Bottom);
        let labels = own.map(|b| {
            let (x0, x1) = slot(b);
            Text::new(
                sig3(b.value, false),
                (f64::midpoint(x0, x1), b.value),
                TextStyle::from((FONT, 10).into_font()).pos(above),
            )
        });
        ok &= chart.draw_series(labels).is_ok();
    }
    ok && legend(root, layout, series)
}

/// The legend, right of the plot: a swatch and the name of each series.
fn legend(root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>, layout: &Layout, series: &[Series]) -> bool {
    let x = (layout.width - LEGEND_W + 10) as i32;
    series.iter().enumerate().all(|(s, ser)| {
        let y = 44 + 18 * s as i32;
        let swatch = Rectangle::new([(x, y), (x + 11, y + 11)], PALETTE[s % PALETTE.len()].filled());
        let name = Text::new(ser.name.as_str(), (x + 17, y), (FONT, 12).into_font());
        root.draw(&swatch).is_ok() && root.draw(&name).is_ok()
    })
}

/// `v` to three significant digits, with k/M/G/T suffixes for thousands and
/// up: 7.3 → "7.30", 1234 → "1.23k", 0.01234 → "0.0123", 1.5e-5 → "1.50e-5".
/// `trim` drops trailing zeros ("7.3", "2k"), for tick labels.
fn sig3(v: f64, trim: bool) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { format!("{v}") };
    }
    let (mut e, r) = round3(v);
    let (scaled, suffix) = match e {
        3..=14 => (r / 10f64.powi(e / 3 * 3), ["k", "M", "G", "T"][(e / 3 - 1) as usize]),
        -3..=2 => (r, ""),
        _ => return exponent(r, e, trim),
    };
    if !suffix.is_empty() {
        e %= 3;
    }
    let s = format!("{scaled:.*}", (2 - e).max(0) as usize);
    if trim { trim_zeros(&s) + suffix } else { s + suffix }
}

/// `v` rounded to three significant digits, with its decimal exponent
/// after rounding (999.6 → (3, 1000)).
fn round3(v: f64) -> (i32, f64) {
    let e = v.abs().log10().floor() as i32;
    let unit = 10f64.powi(e - 2);
    let r = (v / unit).round() * unit;
    (r.abs().log10().floor() as i32, r)
}

fn exponent(r: f64, e: i32, trim: bool) -> String {
    let m = format!("{:.2}", r / 10f64.powi(e));
    format!("{}e{e}", if trim { trim_zeros(&m) } else { m })
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, values: &[f64]) -> Series {
        Series { name: name.into(), values: values.to_vec() }
    }

    fn cats(names: &[&str]) -> Vec<String> {
        names.iter().map(ToString::to_string).collect()
    }

    /// A tiny well-formedness check: tags balance, attribute quotes close,
    /// and every `&` starts one of the five predefined entities.
    fn assert_well_formed(svg: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            check_text(&rest[..i]);
            let end = rest[i..].find('>').expect("unclosed tag") + i;
            let tag = &rest[i + 1..end];
            rest = &rest[end + 1..];
            if tag.starts_with('?') || tag.starts_with('!') {
                continue;
            }
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            check_text(tag);
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().expect("empty tag"));
            }
        }
        check_text(rest);
        assert!(stack.is_empty(), "unclosed {stack:?}");
        assert!(svg.contains(r#"xmlns="http://www.w3.org/2000/svg""#) && svg.contains("viewBox="));
    }

    fn check_text(t: &str) {
        for (i, _) in t.match_indices('&') {
            let ok = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].iter().any(|e| t[i..].starts_with(e));
            assert!(ok, "bare & in {t:?}");
        }
        assert!(!t.contains('<'));
    }

    /// The texts of the chart, one per `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_owned()))
            .collect()
    }

    /// Bars filled with series `s`'s colour (the legend's swatch included).
    fn filled(svg: &str, s: usize) -> usize {
        let RGBColor(r, g, b) = PALETTE[s];
        svg.matches(&format!(r##"fill="#{r:02X}{g:02X}{b:02X}""##)).count()
    }

    #[test]
    fn a_chart_has_a_bar_and_a_label_per_value_and_a_legend() {
        let c = cats(&["single-ts-unserialized", "single-ts-serialized", "tall-narrow"]);
        let s = [series("cellardb", &[7.3, 2.0, 0.5]), series("rocksdb", &[1234.0, 5.5, 0.0])];
        let svg = grouped_bars("write throughput", "MB/s", &c, &s, false);
        assert_well_formed(&svg);
        assert_eq!((filled(&svg, 0), filled(&svg, 1)), (3 + 1, 3 + 1), "a bar per value and a legend swatch");
        let texts = texts(&svg);
        for t in ["write throughput", "MB/s", "cellardb", "rocksdb", "1.23k", "7.30", "tall-narrow"] {
            assert!(texts.iter().any(|x| x == t), "{t} in {texts:?}");
        }
        assert_eq!(svg.matches("rotate(").count(), 1, "the y axis's label alone turns; the groups widen");
        let long = cats(&["a category name too long to lie under its group"]);
        let svg = grouped_bars("t", "y", &long, &s, false);
        assert_eq!(svg.matches("rotate(").count(), 2, "a category name too long turns upright");
    }

    #[test]
    fn output_is_deterministic() {
        let c = cats(&["a", "b"]);
        let s = [series("x", &[1.0, 2.0])];
        assert_eq!(grouped_bars("t", "y", &c, &s, true), grouped_bars("t", "y", &c, &s, true));
    }

    #[test]
    fn text_is_escaped() {
        let c = cats(&["a\"b'c"]);
        let s = [series("x & y", &[1.0])];
        let svg = grouped_bars("<&>", "ms < 1", &c, &s, false);
        assert_well_formed(&svg);
        assert!(svg.contains("&lt;&amp;&gt;") && !svg.contains("<&>"));
        assert!(svg.contains("a&quot;b&apos;c") && svg.contains("x &amp; y"));
    }

    #[test]
    fn log_chart_spans_the_values() {
        let c = cats(&["p"]);
        let svg = grouped_bars("latency", "s", &c, &[series("get", &[1.5e-5]), series("scan", &[2.0])], true);
        assert_well_formed(&svg);
        let texts = texts(&svg);
        assert!(texts.iter().any(|t| t == "1.50e-5") && texts.iter().any(|t| t == "2.00"), "{texts:?}");
        assert!(matches!(y_range(&drawn(&[series("x", &[3e-6, 0.2, 2.0])], 3, true).collect::<Vec<_>>(), true),
            YRange::Log(lo, hi) if (lo - 1e-6).abs() < 1e-18 && (hi - 10.0).abs() < 1e-9));
    }

    #[test]
    fn missing_values_draw_no_bar() {
        let c = cats(&["a", "b", "c", "d"]);
        let s = [series("x", &[f64::NAN, -1.0, f64::INFINITY]), series("y", &[1.0, 0.0, 2.0, 3.0, 99.0])];
        let linear = grouped_bars("t", "y", &c, &s, false);
        assert_eq!((filled(&linear, 0), filled(&linear, 1)), (1, 4 + 1), "x has none; y's fifth has no category");
        let log = grouped_bars("t", "y", &c, &s, true);
        assert_eq!(filled(&log, 1), 3 + 1, "zero has no place on a log axis");
        assert!(!linear.contains("NaN") && !linear.contains("inf"));
    }

    #[test]
    fn empty_input_gives_a_titled_frame() {
        for log in [false, true] {
            for svg in [
                grouped_bars("", "", &[], &[], log),
                grouped_bars("t", "y", &cats(&["a"]), &[], log),
                grouped_bars("t", "y", &[], &[series("x", &[1.0])], log),
                grouped_bars("t", "y", &cats(&["a"]), &[series("x", &[f64::NAN])], log),
            ] {
                assert_well_formed(&svg);
                assert!(!svg.contains("NaN") && !svg.contains("inf"));
            }
        }
    }

    #[test]
    fn three_significant_digits() {
        let cases = [
            (7.3, "7.30"),
            (0.0, "0"),
            (12.34, "12.3"),
            (999.6, "1.00k"),
            (1234.0, "1.23k"),
            (123_456.0, "123k"),
            (2.5e6, "2.50M"),
            (0.01234, "0.0123"),
            (1.5e-5, "1.50e-5"),
            (3e20, "3.00e20"),
        ];
        for (v, s) in cases {
            assert_eq!(sig3(v, false), s, "{v}");
        }
        assert_eq!(sig3(2000.0, true), "2k");
        assert_eq!(sig3(0.001, true), "0.001");
    }
}
