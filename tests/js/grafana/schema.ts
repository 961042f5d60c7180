// The types a generated dashboard is checked against (tests/unit/config/test_dashboard_schema.py
// appends the dashboard as one object literal, each panel and query marked with `satisfies`,
// and runs the pinned tsc over it): Grafana's dashboard model and time series panel options
// from @grafana/schema, Prometheus queries from the foundation SDK (generated from the
// Prometheus data source's schema). Object literals get TypeScript's excess property check,
// so an unknown or misspelt field fails as a wrong type does.
import type { Dashboard, Panel, RowPanel } from "@grafana/schema";
import type { Options } from "@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen";
import type { Dataquery } from "@grafana/grafana-foundation-sdk/prometheus";

// JSON carries an enum's value, not the enum: each string enum becomes its values' union.
type Json<T> = T extends (...args: never[]) => unknown
  ? never
  : T extends string
    ? `${T}`
    : T extends Array<infer U>
      ? Array<Json<U>>
      : T extends object
        ? { [K in keyof T]: Json<T[K]> }
        : T;
type PromQuery = Json<Omit<Dataquery, "_implementsDataqueryVariant">>;
type TimeSeries = Json<Omit<Panel, "options" | "targets"> & { type: "timeseries"; options: Options; targets: PromQuery[] }>;
type Row = Json<RowPanel>;
type Board = Json<Dashboard>;
