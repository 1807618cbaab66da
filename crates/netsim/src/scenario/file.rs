//! The scenario file as written: serde structures with spans, checked and
//! converted by the sibling modules.

use std::collections::BTreeMap;

use eiffel_policy::units::{Rate, Size, Time};
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub name: Option<Spanned<String>>,
    pub title: Option<Spanned<String>>,
    pub seed: Option<Spanned<i64>>,
    pub seeds: Option<Spanned<Vec<i64>>>,
    pub loads: Option<Spanned<Vec<f64>>>,
    pub duration: Option<Spanned<Time>>,
    pub drain: Option<Spanned<Time>>,
    pub topology: TopologyFile,
    #[serde(default)]
    pub traffic: Vec<Spanned<TrafficFile>>,
    #[serde(default)]
    pub scheme: Vec<Spanned<SchemeFile>>,
    pub quick: Option<QuickFile>,
    pub report: Option<ReportFile>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkFile {
    pub rate: Spanned<Rate>,
    pub delay: Spanned<Time>,
    pub buffer: Option<Spanned<Size>>,
    pub loss: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CustomLinkFile {
    pub ends: Spanned<Vec<String>>,
    pub rate: Spanned<Rate>,
    pub delay: Spanned<Time>,
    pub buffer: Option<Spanned<Size>>,
    pub loss: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TopologyFile {
    pub kind: Spanned<String>,
    // leaf-spine
    pub leaves: Option<Spanned<i64>>,
    pub spines: Option<Spanned<i64>>,
    pub hosts_per_leaf: Option<Spanned<i64>>,
    pub host_link: Option<Spanned<LinkFile>>,
    pub fabric_link: Option<Spanned<LinkFile>>,
    // fat-tree
    pub k: Option<Spanned<i64>>,
    pub edge_link: Option<Spanned<LinkFile>>,
    pub core_link: Option<Spanned<LinkFile>>,
    // dumbbell
    pub senders: Option<Spanned<i64>>,
    pub receivers: Option<Spanned<i64>>,
    pub access_link: Option<Spanned<LinkFile>>,
    pub bottleneck: Option<Spanned<LinkFile>>,
    // parking-lot
    pub routers: Option<Spanned<i64>>,
    pub hosts_per_router: Option<Spanned<i64>>,
    pub router_link: Option<Spanned<LinkFile>>,
    // custom
    pub hosts: Option<Spanned<Vec<String>>>,
    pub switches: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub link: Vec<Spanned<CustomLinkFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TrafficFile {
    pub name: Spanned<String>,
    pub kind: Spanned<String>,
    pub class: Option<Spanned<i64>>,
    // poisson, coflows
    pub sizes: Option<Spanned<toml::Value>>,
    pub share: Option<Spanned<f64>>,
    pub hosts: Option<Spanned<toml::Value>>,
    pub flows: Option<Spanned<i64>>,
    pub coflows: Option<Spanned<i64>>,
    pub width: Option<Spanned<i64>>,
    pub deadline: Option<Spanned<bool>>,
    // incast
    pub senders: Option<Spanned<Vec<String>>>,
    pub receiver: Option<Spanned<String>>,
    pub rounds: Option<Spanned<i64>>,
    pub interval: Option<Spanned<Time>>,
    // flows (and incast: size, start)
    pub src: Option<Spanned<String>>,
    pub dst: Option<Spanned<String>>,
    pub count: Option<Spanned<i64>>,
    pub size: Option<Spanned<String>>,
    pub start: Option<Spanned<Time>>,
    pub stop: Option<Spanned<Time>>,
    pub transport: Option<Spanned<String>>,
    pub rate: Option<Spanned<Rate>>,
    pub packet: Option<Spanned<Size>>,
    pub on: Option<Spanned<Time>>,
    pub off: Option<Spanned<Time>>,
    pub shape: Option<Spanned<f64>>,
    pub class_step: Option<Spanned<i64>>,
    pub observe: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SchemeFile {
    pub name: Spanned<String>,
    pub transport: Spanned<String>,
    pub policy: Spanned<String>,
    pub host_policy: Option<Spanned<String>>,
    pub policy_vars: Option<Spanned<BTreeMap<String, String>>>,
    pub buffer: Option<Spanned<Size>>,
    pub host_buffer: Option<Spanned<Size>>,
    pub drop: Option<Spanned<String>>,
    pub ecn_threshold: Option<Spanned<Size>>,
    pub init_window: Option<Spanned<i64>>,
    pub max_window: Option<Spanned<i64>>,
    pub min_rto: Option<Spanned<Time>>,
    pub init_rto: Option<Spanned<Time>>,
    pub max_rto: Option<Spanned<Time>>,
    pub rto: Option<Spanned<Time>>,
    pub dctcp_gain: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QuickFile {
    pub loads: Option<Spanned<Vec<f64>>>,
    pub seeds: Option<Spanned<Vec<i64>>>,
    pub flows: Option<Spanned<i64>>,
    pub coflows: Option<Spanned<i64>>,
    pub duration: Option<Spanned<Time>>,
    pub drain: Option<Spanned<Time>>,
    pub measure_from: Option<Spanned<Time>>,
    pub rounds: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PanelFile {
    pub title: Spanned<String>,
    pub metric: Spanned<String>,
    pub size_class: Option<Spanned<String>>,
    pub traffic: Option<Spanned<String>>,
    pub x: Option<Spanned<String>>,
    pub log_y: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReportFile {
    pub size_classes: Option<Spanned<Vec<String>>>,
    pub sample_ports: Option<Spanned<Vec<String>>>,
    pub sample_interval: Option<Spanned<Time>>,
    pub measure_from: Option<Spanned<Time>>,
    pub check: Option<Spanned<bool>>,
    #[serde(default)]
    pub panel: Vec<Spanned<PanelFile>>,
}
