//! SVG figures of a report, panel by panel as the scenario lists them: a line
//! per scheme against the load (the papers' FCT and CCT figures), or a bar per
//! scheme (delays of an observed flow). Panels are laid out three to a row.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::SimReport;
use crate::scenario::{Axis, Panel};

/// A figure that could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The scenario defines no panels.
    #[error("the scenario has no [[report.panel]] to plot")]
    NoPanels,
    /// Drawing failed (an I/O error writing the file).
    #[error("drawing {file}: {message}")]
    Draw {
        /// The output file.
        file: String,
        /// What went wrong.
        message: String,
    },
}

const W: u32 = 480;
const H: u32 = 360;

/// Writes `report`'s panels to the SVG file `path`.
///
/// # Errors
/// No panels, or the file cannot be written.
pub fn plot(report: &SimReport, path: &Path) -> Result<(), PlotError> {
    if report.panels.is_empty() {
        return Err(PlotError::NoPanels);
    }
    let cols = report.panels.len().min(3);
    let rows = report.panels.len().div_ceil(cols);
    let file = path.display().to_string();
    let err = |e: &dyn std::fmt::Display| PlotError::Draw {
        file: file.clone(),
        message: e.to_string(),
    };
    let root = SVGBackend::new(path, (W * cols as u32, H * rows as u32 + 30)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (title, body) = root.split_vertically(30);
    title
        .titled(
            &format!("{}: {}", report.scenario, report.title),
            ("sans-serif", 18),
        )
        .map_err(|e| err(&e))?;
    let areas = body.split_evenly((rows, cols));
    for (panel, area) in report.panels.iter().zip(areas) {
        let r = match panel.x {
            Axis::Load => lines(report, panel, &area),
            Axis::Scheme => bars(report, panel, &area),
        };
        r.map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

type DrawResult =
    Result<(), DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>>;

fn y_range(values: &[f64], log: bool) -> (f64, f64) {
    let max = values.iter().copied().fold(0.0f64, f64::max).max(1e-9);
    if log {
        let min = values
            .iter()
            .copied()
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let min = if min.is_finite() { min } else { max / 10.0 };
        (min / 1.5, max * 1.5)
    } else {
        (0.0, max * 1.1)
    }
}

fn lines(
    report: &SimReport,
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
) -> DrawResult {
    let loads = &report.loads;
    let series: Vec<(usize, Vec<(f64, f64)>)> = report
        .schemes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                i,
                loads
                    .iter()
                    .filter_map(|&l| report.value(panel, s, l).map(|v| (l, v)))
                    .collect(),
            )
        })
        .collect();
    let all: Vec<f64> = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|&(_, y)| y))
        .collect();
    let (y0, y1) = y_range(&all, panel.log_y);
    let (x0, x1) = (
        loads.iter().copied().fold(f64::INFINITY, f64::min),
        loads.iter().copied().fold(0.0, f64::max),
    );
    let pad = ((x1 - x0) * 0.05).max(0.02);
    let mut b = ChartBuilder::on(area);
    b.caption(&panel.title, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55);
    let style = |i: usize| Palette99::pick(i).to_rgba().stroke_width(2);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc("load")
                .y_desc(panel.metric.name())
                .draw()?;
            for (i, pts) in &series {
                let s = style(*i);
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), s))?
                    .label(report.schemes[*i].clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], s));
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, style(*i).filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }};
    }
    if panel.log_y {
        draw!(b.build_cartesian_2d((x0 - pad)..(x1 + pad), (y0..y1).log_scale())?);
    } else {
        draw!(b.build_cartesian_2d((x0 - pad)..(x1 + pad), y0..y1)?);
    }
    Ok(())
}

fn bars(
    report: &SimReport,
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
) -> DrawResult {
    let load = report.loads.first().copied().unwrap_or(1.0);
    let values: Vec<f64> = report
        .schemes
        .iter()
        .map(|s| report.value(panel, s, load).unwrap_or(0.0))
        .collect();
    let (_, y1) = y_range(&values, false);
    let n = report.schemes.len();
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55)
        .build_cartesian_2d((0..n).into_segmented(), 0.0..y1)?;
    let names = report.schemes.clone();
    chart
        .configure_mesh()
        .y_desc(panel.metric.name())
        .x_labels(n)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    chart.draw_series(values.iter().enumerate().map(|(i, &v)| {
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), v),
            ],
            Palette99::pick(i).to_rgba().filled(),
        );
        bar.set_margin(0, 0, 12, 12);
        bar
    }))?;
    Ok(())
}
