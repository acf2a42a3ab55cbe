//! Grouped bar charts as standalone SVG 1.1 documents, written by hand.
//!
//! The lab report draws a few charts of a few dozen bars each; a plotting
//! dependency would outweigh the layout below. Output is a pure function of
//! the inputs — same data, same bytes — so charts can be committed and
//! diffed. The one guess is text width: sans-serif is taken as
//! `CHAR_W` pixels per character, generous enough that labels get room.
//!
//! ```text
//!              title
//!  y  8 ┤ 7.30                       ■ series 0
//!  l  6 ┤ ██ 5.10                    ■ series 1
//!  a  4 ┤ ██ ██        1.20
//!  b  2 ┤ ██ ██        ██ ██ 0.800
//!  e  0 ┼─██─██────────██─██─────
//!  l        category 0   category 1   (rotated 45° when too wide)
//! ```

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "axis exponents and tick counts of finite, positive figures"
)]

use std::fmt::Write as _;

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
const PALETTE: [&str; 8] = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#882255", "#7F7F7F"];
/// Axis, legend and category text size, px.
const FONT: f64 = 12.0;
/// Estimated width of one character at [`FONT`], px.
const CHAR_W: f64 = 7.0;
/// Value labels above the bars are smaller.
const VALUE_FONT: f64 = 10.0;
const VALUE_CHAR_W: f64 = 6.0;
const PLOT_H: f64 = 300.0;
const MIN_PLOT_W: f64 = 360.0;
const GROUP_GAP: f64 = 20.0;
const TOP: f64 = 44.0;
/// The y of the x axis.
const BOTTOM: f64 = TOP + PLOT_H;
const COS45: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// A grouped bar chart: for each category (e.g. a schema pattern) one bar
/// per series (e.g. engine or query), with a legend, a y axis with 4-6 round
/// tick values and grid lines, value labels above bars (3 significant
/// digits), category labels under the groups (rotated 45° when wider than
/// their group), title and y-axis label. `log_scale` draws a log10 y axis
/// (for latencies spanning µs..s), ticks at powers of ten.
///
/// Never panics: no categories or no series give an empty frame.
#[must_use]
pub fn grouped_bars(title: &str, y_label: &str, categories: &[String], series: &[Series], log_scale: bool) -> String {
    let scale = Scale::fit(drawn(series, categories.len(), log_scale).map(|(_, _, v)| v), log_scale);
    let layout = Layout::new(title, categories, series, &scale);
    let mut out = String::new();
    header(&mut out, &layout, title, y_label);
    axis(&mut out, &layout, &scale);
    bars(&mut out, &layout, &scale, categories.len(), series);
    category_labels(&mut out, &layout, categories);
    legend(&mut out, &layout, series);
    out.push_str("</svg>\n");
    out
}

/// The bars that will be drawn: `(category, series, value)`.
fn drawn(series: &[Series], categories: usize, log: bool) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
    series
        .iter()
        .enumerate()
        .flat_map(move |(s, ser)| ser.values.iter().take(categories).enumerate().map(move |(c, &v)| (c, s, v)))
        .filter(move |&(_, _, v)| drawable(v, log))
}

fn drawable(v: f64, log: bool) -> bool {
    v.is_finite() && if log { v > 0.0 } else { v >= 0.0 }
}

/// Where values land on the y axis.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    /// `0 ..= n·step`, a tick every `step`.
    Linear { step: f64, n: u32 },
    /// `10^lo ..= 10^hi`, a tick at each power of ten.
    Log { lo: i32, hi: i32 },
}

impl Scale {
    fn fit(values: impl Iterator<Item = f64>, log: bool) -> Scale {
        let (min, max) = values.fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if log { Scale::log(min, max) } else { Scale::linear(max) }
    }

    /// The smallest step of 1, 2 or 5 × 10^k that covers `max` in at most 5
    /// steps. Always 3 to 5 steps (4 to 6 ticks): the first candidate,
    /// 10^⌊log10(max/5)⌋ ≤ max/5, needs ≥ 5 steps; each next candidate is at
    /// most 2.5 × the last, so the first to need ≤ 5 needs > 5/2.5 = 2.
    fn linear(max: f64) -> Scale {
        let max = if max > 0.0 { max } else { 1.0 };
        let base = 10f64.powi((max / 5.0).log10().floor() as i32);
        let steps_for = |step: f64| (max / step * (1.0 - 1e-12)).ceil();
        [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| base * m)
            .find(|&step| steps_for(step) <= 5.0)
            .map_or(Scale::Linear { step: max, n: 1 }, |step| Scale::Linear { step, n: steps_for(step) as u32 })
    }

    /// Decades around `min..=max`; the bottom is strictly below `min` so
    /// the shortest bar still shows.
    fn log(min: f64, max: f64) -> Scale {
        if !(min > 0.0 && max >= min) {
            return Scale::Log { lo: 0, hi: 1 };
        }
        let lo = min.log10().ceil() as i32 - 1;
        Scale::Log { lo, hi: (max.log10().ceil() as i32).max(lo + 1) }
    }

    /// Tick values, bottom to top. A log axis spanning more than 8 decades
    /// ticks every few decades to stay readable.
    fn ticks(self) -> Vec<f64> {
        match self {
            Scale::Linear { step, n } => (0..=n).map(|i| f64::from(i) * step).collect(),
            Scale::Log { lo, hi } => {
                let stride = ((hi - lo) + 7) / 8;
                (lo..=hi).step_by(stride.max(1) as usize).map(|e| 10f64.powi(e)).collect()
            }
        }
    }

    /// Height of `v` as a fraction of the axis, 0 at the bottom, 1 at the top.
    fn frac(self, v: f64) -> f64 {
        let f = match self {
            Scale::Linear { step, n } => v / (step * f64::from(n)),
            Scale::Log { lo, hi } => (v.log10() - f64::from(lo)) / f64::from(hi - lo),
        };
        f.clamp(0.0, 1.0)
    }
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

/// Text for XML character data and attribute values. Control characters
/// XML 1.0 forbids become spaces.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c < ' ' && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn text_w(s: &str, char_w: f64) -> f64 {
    s.chars().count() as f64 * char_w
}

fn max_w<'a>(texts: impl Iterator<Item = &'a str>, char_w: f64) -> f64 {
    texts.map(|t| text_w(t, char_w)).fold(0.0, f64::max)
}

/// Positions in px. The plot's bottom-left corner is `(left, BOTTOM)`.
#[derive(Debug)]
struct Layout {
    width: f64,
    height: f64,
    left: f64,
    plot_w: f64,
    /// Width given to each category's group of bars.
    slot: f64,
    bar_w: f64,
    /// Category labels turn 45° when wider than their slot.
    rotate: bool,
}

impl Layout {
    fn new(title: &str, categories: &[String], series: &[Series], scale: &Scale) -> Layout {
        let labels =
            drawn(series, categories.len(), matches!(scale, Scale::Log { .. })).map(|(_, _, v)| sig3(v, false));
        let bar_w = (labels.map(|l| text_w(&l, VALUE_CHAR_W)).fold(0.0, f64::max) + 4.0).clamp(14.0, 48.0);
        let n_cat = categories.len().max(1) as f64;
        let plot_w = (n_cat * (series.len().max(1) as f64 * bar_w + GROUP_GAP)).max(MIN_PLOT_W);
        let slot = plot_w / n_cat;
        let cat_w = max_w(categories.iter().map(String::as_str), CHAR_W);
        let rotate = cat_w > slot - 6.0;
        let ticks_w = scale.ticks().into_iter().map(|t| text_w(&sig3(t, true), CHAR_W)).fold(0.0, f64::max);
        let spill = if rotate { cat_w * COS45 - slot / 2.0 + 8.0 } else { 0.0 };
        let left = (ticks_w + 40.0).max(spill);
        let bottom = if rotate { (cat_w + FONT) * COS45 + 16.0 } else { FONT + 16.0 };
        let legend_w = 28.0 + max_w(series.iter().map(|s| s.name.as_str()), CHAR_W);
        let width = (left + plot_w + 20.0 + legend_w + 10.0).max(text_w(title, 9.0) + 20.0);
        Layout { width, height: TOP + PLOT_H + bottom, left, plot_w, slot, bar_w, rotate }
    }

    /// The y coordinate of a value at `frac` of the axis height.
    #[allow(clippy::unused_self, reason = "beside the layout's other coordinates")]
    fn y(&self, frac: f64) -> f64 {
        BOTTOM - frac * PLOT_H
    }

    /// The left edge of series `s`'s bar in category `c`.
    fn bar_x(&self, c: usize, s: usize, n_series: usize) -> f64 {
        let group_w = n_series as f64 * self.bar_w;
        self.left + c as f64 * self.slot + (self.slot - group_w) / 2.0 + s as f64 * self.bar_w
    }
}

fn header(out: &mut String, l: &Layout, title: &str, y_label: &str) {
    let (w, h) = (l.width.ceil(), l.height.ceil());
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{FONT}">"#
    );
    let _ = writeln!(out, r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>"##);
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + PLOT_H / 2.0,
        esc(y_label)
    );
}

/// Grid lines and tick labels, then the axis lines over them.
fn axis(out: &mut String, l: &Layout, scale: &Scale) {
    let right = l.left + l.plot_w;
    for t in scale.ticks() {
        let y = l.y(scale.frac(t));
        let _ =
            writeln!(out, r##"<line x1="{:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#dddddd"/>"##, l.left);
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            l.left - 6.0,
            y + FONT / 3.0,
            sig3(t, true)
        );
    }
    let _ =
        writeln!(out, r##"<line x1="{0:.1}" y1="{TOP:.1}" x2="{0:.1}" y2="{BOTTOM:.1}" stroke="#333333"/>"##, l.left);
    let _ = writeln!(
        out,
        r##"<line x1="{:.1}" y1="{BOTTOM:.1}" x2="{right:.1}" y2="{BOTTOM:.1}" stroke="#333333"/>"##,
        l.left
    );
}

/// One `<rect>` per drawable value, its value above it and in its tooltip.
fn bars(out: &mut String, l: &Layout, scale: &Scale, categories: usize, series: &[Series]) {
    let log = matches!(scale, Scale::Log { .. });
    for (c, s, v) in drawn(series, categories, log) {
        let x = l.bar_x(c, s, series.len());
        let y = l.y(scale.frac(v));
        let label = sig3(v, false);
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {label}</title></rect>"#,
            l.bar_w - 2.0,
            BOTTOM - y,
            PALETTE[s % PALETTE.len()],
            esc(&series[s].name)
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{VALUE_FONT}">{label}</text>"#,
            x + (l.bar_w - 2.0) / 2.0,
            y - 3.0
        );
    }
}

fn category_labels(out: &mut String, l: &Layout, categories: &[String]) {
    for (c, name) in categories.iter().enumerate() {
        let x = l.left + (c as f64 + 0.5) * l.slot;
        let y = BOTTOM + FONT + 4.0;
        let _ = if l.rotate {
            writeln!(
                out,
                r#"<text transform="translate({x:.1},{:.1}) rotate(-45)" text-anchor="end">{}</text>"#,
                y - 4.0,
                esc(name)
            )
        } else {
            writeln!(out, r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle">{}</text>"#, esc(name))
        };
    }
}

/// A swatch and a name per series, right of the plot.
fn legend(out: &mut String, l: &Layout, series: &[Series]) {
    let x = l.left + l.plot_w + 20.0;
    for (s, ser) in series.iter().enumerate() {
        let y = TOP + s as f64 * 20.0;
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="12" height="12" fill="{}"/>"#,
            PALETTE[s % PALETTE.len()]
        );
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, x + 18.0, y + 10.0, esc(&ser.name));
    }
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

    fn rects(svg: &str) -> usize {
        svg.matches("<rect").count()
    }

    #[test]
    fn chart_is_well_formed_with_one_rect_per_bar_swatch_and_background() {
        let c = cats(&["single-ts-unserialized", "single-ts-serialized", "tall-narrow"]);
        let s = [series("cellardb", &[7.3, 2.0, 0.5]), series("rocksdb", &[1234.0, 5.5, 0.0])];
        let svg = grouped_bars("write throughput", "MB/s", &c, &s, false);
        assert_well_formed(&svg);
        assert_eq!(rects(&svg), 1 + 6 + 2);
        assert!(svg.contains(">1.23k<") && svg.contains(">7.30<"));
        assert!(svg.contains("rotate(-45)"), "long category names turn");
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
    fn linear_ticks_are_round() {
        assert_eq!(Scale::linear(7.3).ticks(), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(Scale::linear(10.0).ticks(), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(Scale::linear(101.0).ticks(), [0.0, 50.0, 100.0, 150.0]);
        assert_eq!(Scale::linear(0.0).ticks().len(), 6, "all zero: 0..1");
        let labels: Vec<String> = Scale::linear(0.7).ticks().into_iter().map(|t| sig3(t, true)).collect();
        assert_eq!(labels, ["0", "0.2", "0.4", "0.6", "0.8"]);
    }

    #[test]
    fn linear_ticks_number_four_to_six_and_cover_max() {
        let mut max = 1e-6;
        while max < 1e9 {
            let ticks = Scale::linear(max).ticks();
            assert!((4..=6).contains(&ticks.len()), "{max}: {ticks:?}");
            assert!(*ticks.last().unwrap() >= max * (1.0 - 1e-9), "{max}: {ticks:?}");
            max *= 1.37;
        }
    }

    #[test]
    fn log_ticks_are_powers_of_ten_below_min_to_above_max() {
        let s = Scale::fit([3e-6, 0.2, 2.0].into_iter(), true);
        assert_eq!(s, Scale::Log { lo: -6, hi: 1 });
        assert_eq!(
            s.ticks().iter().map(|t| sig3(*t, true)).collect::<Vec<_>>(),
            ["1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1", "1", "10"]
        );
        assert_eq!(Scale::log(1e-6, 1e-6), Scale::Log { lo: -7, hi: -6 }, "an exact power still shows a bar");
        assert_eq!(Scale::Log { lo: -9, hi: 9 }.ticks().len(), 7, "18 decades tick every 3");
    }

    #[test]
    fn log_chart_labels_decades() {
        let c = cats(&["p"]);
        let svg = grouped_bars("latency", "s", &c, &[series("get", &[1.5e-5]), series("scan", &[2.0])], true);
        assert_well_formed(&svg);
        assert!(svg.contains(">1e-5<") && svg.contains(">10<") && svg.contains(">1.50e-5<"));
    }

    #[test]
    fn missing_values_draw_no_bar() {
        let c = cats(&["a", "b", "c", "d"]);
        let s = [series("x", &[f64::NAN, -1.0, f64::INFINITY]), series("y", &[1.0, 0.0, 2.0, 3.0, 99.0])];
        let linear = grouped_bars("t", "y", &c, &s, false);
        assert_eq!(rects(&linear), 1 + 4 + 2, "x has no drawable value; y's fifth has no category");
        let log = grouped_bars("t", "y", &c, &s, true);
        assert_eq!(rects(&log), 1 + 3 + 2, "zero has no place on a log axis");
        assert!(!linear.contains("NaN") && !linear.contains("inf"));
    }

    #[test]
    fn empty_input_gives_an_empty_frame() {
        for log in [false, true] {
            for svg in [
                grouped_bars("", "", &[], &[], log),
                grouped_bars("t", "y", &cats(&["a"]), &[], log),
                grouped_bars("t", "y", &[], &[series("x", &[1.0])], log),
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
