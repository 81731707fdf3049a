import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Counter, Gauge, Histogram, Registry, Summary, collectDefaultMetrics } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../platform/runtime/config.js';
import * as metrics from '../../platform/telemetry/metrics.js';

/**
 * The Grafana dashboard (deploy/grafana/banking-graph.json) against the metrics this process
 * registers: every query parses, names only series the registry exposes and only labels they carry,
 * and every metric of ours has a panel. A renamed metric or label, or a new metric without a panel,
 * fails here rather than as an empty graph.
 */

const DASHBOARD_PATH = path.join(REPO_ROOT, 'deploy/grafana/banking-graph.json');
const DATASOURCE = '${datasource}';
/** Labels Prometheus attaches to every scraped series. */
const TARGET_LABELS = ['instance', 'job'];
/** The variables Grafana itself defines. */
const BUILT_IN_VARIABLES = new Set(['__rate_interval', '__interval', '__range']);

// ---- The dashboard model, read with checks (the JSON is data, not trusted types). ----

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Target {
  refId: string;
  expr: string;
  legendFormat: string;
  datasource: JsonObject | null;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  description: string;
  datasource: JsonObject | null;
  gridPos: { x: number; y: number; w: number; h: number };
  targets: Target[];
  /** The row a panel sits under (the last row panel before it), or null. */
  row: string | null;
}
interface Variable {
  name: string;
  type: string;
  query: string;
  datasource: JsonObject | null;
  allValue: string | null;
}
interface Dashboard {
  raw: JsonObject;
  schemaVersion: number;
  rows: Panel[];
  panels: Panel[];
  variables: Variable[];
}

const isObject = (value: Json | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const objectOf = (value: Json | undefined): JsonObject => (isObject(value) ? value : {});
const arrayOf = (value: Json | undefined): Json[] => (Array.isArray(value) ? value : []);
const stringOf = (value: Json | undefined): string => (typeof value === 'string' ? value : '');
const numberOf = (value: Json | undefined): number => (typeof value === 'number' ? value : Number.NaN);

function readPanel(value: Json, row: string | null): Panel {
  const panel = objectOf(value);
  const grid = objectOf(panel.gridPos);
  return {
    id: numberOf(panel.id),
    type: stringOf(panel.type),
    title: stringOf(panel.title),
    description: stringOf(panel.description),
    datasource: isObject(panel.datasource) ? panel.datasource : null,
    gridPos: { x: numberOf(grid.x), y: numberOf(grid.y), w: numberOf(grid.w), h: numberOf(grid.h) },
    targets: arrayOf(panel.targets).map((entry) => {
      const target = objectOf(entry);
      return {
        refId: stringOf(target.refId),
        expr: stringOf(target.expr),
        legendFormat: stringOf(target.legendFormat),
        datasource: isObject(target.datasource) ? target.datasource : null,
      };
    }),
    row,
  };
}

function loadDashboard(): Dashboard {
  const parsed = JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as Json;
  if (!isObject(parsed)) throw new Error(`${DASHBOARD_PATH} is not a JSON object`);
  const rows: Panel[] = [];
  const panels: Panel[] = [];
  let row: string | null = null;
  for (const entry of arrayOf(parsed.panels)) {
    const panel = readPanel(entry, row);
    if (panel.type === 'row') {
      rows.push(panel);
      row = panel.title;
      // A collapsed row keeps its panels inside it.
      for (const inner of arrayOf(objectOf(entry).panels)) panels.push(readPanel(inner, row));
    } else {
      panels.push(panel);
    }
  }
  const variables = arrayOf(objectOf(parsed.templating).list).map((entry): Variable => {
    const variable = objectOf(entry);
    // Grafana stores a Prometheus variable's query as a string, or as an object holding it.
    const query = typeof variable.query === 'string' ? variable.query : stringOf(objectOf(variable.query).query);
    return {
      name: stringOf(variable.name),
      type: stringOf(variable.type),
      query,
      datasource: isObject(variable.datasource) ? variable.datasource : null,
      allValue: typeof variable.allValue === 'string' ? variable.allValue : null,
    };
  });
  return { raw: parsed, schemaVersion: numberOf(parsed.schemaVersion), rows, panels, variables };
}

// ---- What the registry exposes: every series name, with the labels it carries. ----

interface Series {
  family: string;
  labels: Set<string>;
}

/** prom-client keeps a metric's label names on the object; its types do not declare them. */
function labelNamesOf(metric: object): string[] {
  const names: unknown = Reflect.get(metric, 'labelNames');
  if (!Array.isArray(names) || !names.every((name): name is string => typeof name === 'string'))
    throw new Error('a prom-client metric without its labelNames array: has prom-client changed?');
  return names;
}

/** Every series name the registry exposes: a histogram as _bucket (with le), _sum and _count; a summary as itself (with quantile), _sum and _count. */
function seriesOf(registry: Registry): Map<string, Series> {
  const series = new Map<string, Series>();
  for (const metric of registry.getMetricsAsArray()) {
    const family = metric.name;
    const labels = [...labelNamesOf(metric), ...TARGET_LABELS];
    if (metric instanceof Histogram) {
      series.set(`${family}_bucket`, { family, labels: new Set([...labels, 'le']) });
      series.set(`${family}_sum`, { family, labels: new Set(labels) });
      series.set(`${family}_count`, { family, labels: new Set(labels) });
    } else if (metric instanceof Summary) {
      series.set(family, { family, labels: new Set([...labels, 'quantile']) });
      series.set(`${family}_sum`, { family, labels: new Set(labels) });
      series.set(`${family}_count`, { family, labels: new Set(labels) });
    } else {
      series.set(family, { family, labels: new Set(labels) });
    }
  }
  return series;
}

// ---- A checker for the PromQL the dashboard uses: a parser, and the labels each expression keeps. ----

type Token =
  | { kind: 'identifier'; text: string }
  | { kind: 'number'; text: string }
  | { kind: 'string'; text: string }
  | { kind: 'range'; text: string }
  | { kind: 'punctuation'; text: string };

const PUNCTUATION = ['==', '!=', '<=', '>=', '=~', '!~', '=', '<', '>', '+', '-', '*', '/', '%', '^', ',', '(', ')', '{', '}'];

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < expr.length) {
    const rest = expr.slice(at);
    const space = /^\s+/.exec(rest);
    if (space) {
      at += space[0].length;
      continue;
    }
    const quoted = /^"(?:[^"\\]|\\.)*"|^'(?:[^'\\]|\\.)*'|^`[^`]*`/.exec(rest);
    if (quoted) {
      tokens.push({ kind: 'string', text: quoted[0].slice(1, -1) });
      at += quoted[0].length;
      continue;
    }
    // A range (or subquery) kept whole: `[$__rate_interval]` is Grafana's to fill in.
    const range = /^\[([^\]]*)\]/.exec(rest);
    if (range) {
      tokens.push({ kind: 'range', text: range[1]!.trim() });
      at += range[0].length;
      continue;
    }
    const number = /^(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/.exec(rest);
    if (number) {
      tokens.push({ kind: 'number', text: number[0] });
      at += number[0].length;
      continue;
    }
    const identifier = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(rest);
    if (identifier) {
      tokens.push({ kind: 'identifier', text: identifier[0] });
      at += identifier[0].length;
      continue;
    }
    const punctuation = PUNCTUATION.find((candidate) => rest.startsWith(candidate));
    if (!punctuation)
      throw new Error(
        `cannot read ${JSON.stringify(rest.slice(0, 20))}${rest.startsWith('$') ? ' (a Grafana variable outside a label matcher or range)' : ''}`,
      );
    tokens.push({ kind: 'punctuation', text: punctuation });
    at += punctuation.length;
  }
  return tokens;
}

interface Matcher {
  label: string;
  op: string;
  value: string;
}
type Grouping = { mode: 'by' | 'without'; labels: string[] };
type Node =
  | { kind: 'number' }
  | { kind: 'string'; value: string }
  | { kind: 'selector'; metric: string; matchers: Matcher[]; range: string | null }
  | { kind: 'call'; fn: string; args: Node[] }
  | { kind: 'aggregate'; op: string; grouping: Grouping | null; param: Node | null; expr: Node }
  | { kind: 'binary'; op: string; left: Node; right: Node; matching: Grouping | null; grouped: boolean };

const AGGREGATIONS = new Set(['sum', 'avg', 'min', 'max', 'count', 'group', 'stddev', 'stdvar']);
const PARAMETRIC_AGGREGATIONS = new Set(['topk', 'bottomk', 'quantile']);
/** Binary operators from the loosest to the tightest; `^` binds right to left. */
const PRECEDENCE = [['or'], ['and', 'unless'], ['==', '!=', '<=', '<', '>=', '>'], ['+', '-'], ['*', '/', '%', 'atan2'], ['^']];
const SET_OPERATORS = new Set(['or', 'and', 'unless']);

function parse(expr: string): Node {
  const tokens = tokenize(expr);
  let at = 0;
  const peek = (): Token | undefined => tokens[at];
  const fail = (what: string): never => {
    const token = peek();
    throw new Error(`${what}, found ${token ? JSON.stringify(token.text) : 'the end'}`);
  };
  const isText = (text: string): boolean => peek()?.text === text && peek()?.kind !== 'string';
  const expect = (text: string): void => {
    if (!isText(text)) fail(`expected ${JSON.stringify(text)}`);
    at += 1;
  };
  const identifier = (): string => {
    const token = peek();
    if (token?.kind !== 'identifier') return fail('expected a name');
    at += 1;
    return token.text;
  };
  const labelList = (): string[] => {
    expect('(');
    const labels: string[] = [];
    while (!isText(')')) {
      labels.push(identifier());
      if (!isText(')')) expect(',');
    }
    expect(')');
    return labels;
  };
  const grouping = (): Grouping | null => {
    const token = peek();
    if (token?.kind === 'identifier' && (token.text === 'by' || token.text === 'without')) {
      at += 1;
      return { mode: token.text, labels: labelList() };
    }
    return null;
  };

  const binary = (level: number): Node => {
    if (level === PRECEDENCE.length) return unary();
    let left = binary(level + 1);
    for (;;) {
      const token = peek();
      if (!token || token.kind === 'string' || !PRECEDENCE[level]!.includes(token.text)) return left;
      at += 1;
      if (isText('bool')) at += 1;
      let matching: Grouping | null = null;
      if (isText('on') || isText('ignoring')) {
        const mode = identifier() === 'on' ? 'by' : 'without';
        matching = { mode, labels: labelList() };
      }
      let grouped = false;
      if (isText('group_left') || isText('group_right')) {
        at += 1;
        grouped = true;
        if (isText('(')) labelList();
      }
      // `^` is right-associative: its right side takes the same level again.
      const right = token.text === '^' ? binary(level) : binary(level + 1);
      left = { kind: 'binary', op: token.text, left, right, matching, grouped };
      if (token.text === '^') return left;
    }
  };

  const unary = (): Node => {
    if (isText('-') || isText('+')) {
      at += 1;
      return unary();
    }
    return primary();
  };

  const primary = (): Node => {
    const token = peek();
    if (!token) return fail('expected an expression');
    if (token.kind === 'number') {
      at += 1;
      return { kind: 'number' };
    }
    if (token.kind === 'string') {
      at += 1;
      return { kind: 'string', value: token.text };
    }
    if (token.text === '(') {
      at += 1;
      const inner = binary(0);
      expect(')');
      if (peek()?.kind === 'range') fail('a subquery, which this checker does not read');
      return inner;
    }
    if (token.text === '{') return fail('a selector without a metric name');
    const name = identifier();
    if (name === 'Inf' || name === 'NaN') return { kind: 'number' };
    if (AGGREGATIONS.has(name) || PARAMETRIC_AGGREGATIONS.has(name)) {
      const before = grouping();
      expect('(');
      const param = PARAMETRIC_AGGREGATIONS.has(name) ? binary(0) : null;
      if (param) expect(',');
      const expr = binary(0);
      expect(')');
      const after = grouping();
      if (before && after) fail(`${name} grouped twice`);
      return { kind: 'aggregate', op: name, grouping: before ?? after, param, expr };
    }
    if (isText('(')) {
      at += 1;
      const args: Node[] = [];
      while (!isText(')')) {
        args.push(binary(0));
        if (!isText(')')) expect(',');
      }
      expect(')');
      return { kind: 'call', fn: name, args };
    }
    const matchers: Matcher[] = [];
    if (isText('{')) {
      at += 1;
      while (!isText('}')) {
        const label = identifier();
        const op = peek();
        if (!op || op.kind === 'string' || !['=', '!=', '=~', '!~'].includes(op.text)) return fail('expected a label matcher');
        at += 1;
        const value = peek();
        if (value?.kind !== 'string') return fail('expected a quoted label value');
        at += 1;
        matchers.push({ label, op: op.text, value: value.text });
        if (!isText('}')) expect(',');
      }
      expect('}');
    }
    let range: string | null = null;
    const next = peek();
    if (next?.kind === 'range') {
      at += 1;
      range = next.text;
    }
    if (isText('offset') || isText('@')) fail('an offset or @ modifier, which this checker does not read');
    return { kind: 'selector', metric: name, matchers, range };
  };

  const node = binary(0);
  if (at < tokens.length) fail('expected the end');
  return node;
}

/** What an expression evaluates to: a scalar, a string, or an instant or range vector with the labels its series are sure to carry. */
type Value = { type: 'scalar' | 'string' } | { type: 'vector' | 'matrix'; labels: Set<string> };

/** Functions that keep their (first) argument's labels; `rate` and the like take a range, the rest an instant vector. */
const RANGE_FUNCTIONS = new Set([
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'changes',
  'resets',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'last_over_time',
]);
/** The range functions whose window must be Grafana's $__rate_interval (at least four scrapes, whatever the zoom). */
const RATE_FUNCTIONS = new Set(['rate', 'irate', 'increase']);
const INSTANT_FUNCTIONS = new Set([
  'abs',
  'ceil',
  'floor',
  'round',
  'sqrt',
  'exp',
  'ln',
  'log2',
  'log10',
  'clamp',
  'clamp_min',
  'clamp_max',
]);

interface Check {
  /** Problems found, each naming what is wrong. */
  problems: string[];
  /** The metric families the expression reads. */
  families: Set<string>;
  /** The labels every series of its result carries, when it is a vector. */
  labels: Set<string> | null;
}

const show = (labels: Iterable<string>) => `{${[...labels].sort().join(', ')}}`;

/** Parses `expr` and checks it against the series `known`: names, labels, groupings, ranges. */
function checkExpression(expr: string, known: Map<string, Series>): Check {
  const problems: string[] = [];
  // Problems of labels, left out when a metric is unknown: its labels are then unknown too.
  const labelProblems: string[] = [];
  const unknownMetrics = new Set<string>();
  const families = new Set<string>();
  let root: Node;
  try {
    root = parse(expr);
  } catch (error) {
    return { problems: [`does not parse: ${(error as Error).message}`], families, labels: null };
  }

  const vectorLabels = (value: Value, where: string): Set<string> => {
    if (value.type === 'vector') return value.labels;
    problems.push(`${where} takes an instant vector, not a ${value.type}`);
    return new Set();
  };

  const evaluate = (node: Node): Value => {
    switch (node.kind) {
      case 'number':
        return { type: 'scalar' };
      case 'string':
        return { type: 'string' };
      case 'selector': {
        const series = known.get(node.metric);
        if (series) families.add(series.family);
        else {
          unknownMetrics.add(node.metric);
          problems.push(`${node.metric} is no series of the registry`);
        }
        const labels = new Set(series?.labels ?? []);
        for (const { label } of node.matchers) {
          if (series && !labels.has(label)) problems.push(`${node.metric} has no label ${label} (it has ${show(labels)})`);
        }
        return { type: node.range === null ? 'vector' : 'matrix', labels };
      }
      case 'call': {
        const [first, ...rest] = node.args.map(evaluate);
        if (RANGE_FUNCTIONS.has(node.fn)) {
          if (node.args.length !== 1 || first?.type !== 'matrix') problems.push(`${node.fn}() takes one range vector`);
          const argument = node.args[0];
          if (
            RATE_FUNCTIONS.has(node.fn) &&
            argument?.kind === 'selector' &&
            argument.range !== null &&
            argument.range !== '$__rate_interval'
          ) {
            problems.push(`${node.fn}(${argument.metric}[${argument.range}]) should use [$__rate_interval]`);
          }
          return { type: 'vector', labels: first?.type === 'matrix' ? first.labels : new Set() };
        }
        if (INSTANT_FUNCTIONS.has(node.fn)) {
          if (!first) problems.push(`${node.fn}() takes a vector`);
          if (rest.some((value) => value.type !== 'scalar')) problems.push(`${node.fn}() takes scalars after its vector`);
          return { type: 'vector', labels: first ? vectorLabels(first, `${node.fn}()`) : new Set() };
        }
        if (node.fn === 'histogram_quantile') {
          const [quantile, buckets] = [first, rest[0]];
          if (node.args.length !== 2 || quantile?.type !== 'scalar' || !buckets) {
            problems.push('histogram_quantile() takes a scalar and a vector');
            return { type: 'vector', labels: new Set() };
          }
          const labels = vectorLabels(buckets, 'histogram_quantile()');
          if (!labels.has('le'))
            labelProblems.push(`histogram_quantile() over series without le (${show(labels)}): keep le in the grouping`);
          return { type: 'vector', labels: new Set([...labels].filter((label) => label !== 'le')) };
        }
        if (node.fn === 'vector') return { type: 'vector', labels: new Set() };
        if (node.fn === 'scalar' || node.fn === 'time') return { type: 'scalar' };
        problems.push(`${node.fn}() is a function this checker does not know: teach it, or use another`);
        return { type: 'vector', labels: new Set() };
      }
      case 'aggregate': {
        if (node.param) evaluate(node.param);
        const inner = vectorLabels(evaluate(node.expr), `${node.op}()`);
        if (!node.grouping)
          return { type: 'vector', labels: PARAMETRIC_AGGREGATIONS.has(node.op) && node.op !== 'quantile' ? inner : new Set() };
        for (const label of node.grouping.labels) {
          if (!inner.has(label))
            labelProblems.push(`${node.op} ${node.grouping.mode} (${label}) over series without ${label} (${show(inner)})`);
        }
        if (node.op === 'topk' || node.op === 'bottomk') return { type: 'vector', labels: inner };
        if (node.grouping.mode === 'by') return { type: 'vector', labels: new Set(node.grouping.labels) };
        return { type: 'vector', labels: new Set([...inner].filter((label) => !node.grouping!.labels.includes(label))) };
      }
      case 'binary': {
        const left = evaluate(node.left);
        const right = evaluate(node.right);
        if (left.type === 'scalar' && right.type === 'scalar') return { type: 'scalar' };
        if (left.type === 'scalar' && right.type === 'vector') return right;
        if (left.type === 'vector' && right.type === 'scalar') return left;
        if (left.type !== 'vector' || right.type !== 'vector') {
          problems.push(`${node.op} between a ${left.type} and a ${right.type}`);
          return { type: 'vector', labels: new Set() };
        }
        if (node.grouped) problems.push('group_left / group_right: this checker does not read many-to-one matches');
        if (node.matching) {
          for (const label of node.matching.labels) {
            if (!left.labels.has(label) || !right.labels.has(label))
              labelProblems.push(
                `${node.op} ${node.matching.mode === 'by' ? 'on' : 'ignoring'} (${label}): not a label of both sides (${show(left.labels)}, ${show(right.labels)})`,
              );
          }
        }
        if (SET_OPERATORS.has(node.op)) {
          // `or` keeps series of either side: only the labels of both are sure.
          return {
            type: 'vector',
            labels: node.op === 'or' ? new Set([...left.labels].filter((label) => right.labels.has(label))) : left.labels,
          };
        }
        const compared = (labels: Set<string>) =>
          node.matching?.mode === 'without' ? [...labels].filter((label) => !node.matching!.labels.includes(label)) : [...labels];
        if (!node.matching || node.matching.mode === 'without') {
          // One-to-one matching on every label: two sides with different label names never match.
          if (show(compared(left.labels)) !== show(compared(right.labels)))
            labelProblems.push(
              `${node.op} matches ${show(left.labels)} with ${show(right.labels)}: no series pair up (group both sides by the same labels)`,
            );
        }
        return left;
      }
    }
  };

  const result = evaluate(root);
  if (result.type !== 'vector') problems.push(`evaluates to a ${result.type}, not an instant vector`);
  if (unknownMetrics.size > 0) return { problems, families, labels: null };
  return { problems: [...problems, ...labelProblems], families, labels: result.type === 'vector' ? result.labels : null };
}

/** The labels a legend format such as `{{service}} {{route}}` shows. */
const legendLabels = (format: string): string[] =>
  [...format.matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)].map((match) => match[1]!);
/** The variables (`$service`, `${instance}`, `[[x]]`) a text uses. */
const variablesIn = (text: string): string[] =>
  [...text.matchAll(/\$\{([a-zA-Z0-9_]+)(?::[^}]*)?\}|\$([a-zA-Z0-9_]+)|\[\[([a-zA-Z0-9_]+)\]\]/g)].map(
    (match) => match[1] ?? match[2] ?? match[3]!,
  );
/** A Prometheus variable query: `label_values(selector, label)`. */
const LABEL_VALUES = /^\s*label_values\(\s*(.+)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/s;

// ---- The tests. ----

const dashboard = loadDashboard();
const known = seriesOf(metrics.registry);
const queries = dashboard.panels.flatMap((panel) =>
  panel.targets.map((target) => ({ panel, target, where: `"${panel.title}" ${target.refId}` })),
);

/** The registry's metrics that collectDefaultMetrics adds (Node's and the process's): a panel for each is not required. */
function defaultMetricNames(): Set<string> {
  const fresh = new Registry();
  collectDefaultMetrics({ register: fresh });
  return new Set(fresh.getMetricsAsArray().map((metric) => metric.name));
}

describe('the PromQL checker', () => {
  const check = (expr: string) => checkExpression(expr, known).problems;

  it('passes what the dashboard writes', () => {
    expect(
      check('sum by (service, route) (rate(http_server_request_duration_seconds_count{service=~"$service"}[$__rate_interval]))'),
    ).toEqual([]);
    expect(
      check('histogram_quantile(0.95, sum by (service, le) (rate(http_server_request_duration_seconds_bucket[$__rate_interval])))'),
    ).toEqual([]);
    expect(
      check(
        'sum(rate(gateway_session_lookups_total{source="memory"}[$__rate_interval])) / sum(rate(gateway_session_lookups_total[$__rate_interval]))',
      ),
    ).toEqual([]);
    expect(
      check(
        '(sum by (subgraph) (rate(gateway_subgraph_fetch_duration_seconds_count{outcome="error"}[$__rate_interval])) or sum by (subgraph) (rate(gateway_subgraph_fetch_duration_seconds_count[$__rate_interval])) * 0) / sum by (subgraph) (rate(gateway_subgraph_fetch_duration_seconds_count[$__rate_interval]))',
      ),
    ).toEqual([]);
    expect(checkExpression('max by (database, queue) (queue_depth{instance=~"$instance"})', known).labels).toEqual(
      new Set(['database', 'queue']),
    );
  });

  it('finds a misspelt metric, a label the metric lacks, and a function it does not know', () => {
    expect(check('sum(rate(http_server_requests_duration_seconds_count[$__rate_interval]))')).toEqual([
      'http_server_requests_duration_seconds_count is no series of the registry',
    ]);
    expect(check('sum(rate(http_server_request_duration_seconds[$__rate_interval]))')).toEqual([
      'http_server_request_duration_seconds is no series of the registry',
    ]);
    expect(check('sum by (service) (rate(delivery_attempts_total{outcome="failed"}[$__rate_interval]))')).toEqual([
      'sum by (service) over series without service ({instance, job, kind, outcome})',
    ]);
    expect(check('sum(rate(delivery_attempts_total{status="failed"}[$__rate_interval]))')).toEqual([
      'delivery_attempts_total has no label status (it has {instance, job, kind, outcome})',
    ]);
    expect(check('sum(rate(delivery_attempts_total[$__rate_interval])) by (kind)')).toEqual([]);
    expect(check('sum(ratez(delivery_attempts_total[$__rate_interval]))')).toEqual([
      'ratez() is a function this checker does not know: teach it, or use another',
    ]);
    expect(check('sum(rate(delivery_attempts_total[$__rate_interval])')[0]).toMatch(/^does not parse/);
    expect(check('sum(rate(delivery_attempts_total{kind=$kind}[$__rate_interval]))')[0]).toMatch(/^does not parse/);
  });

  it('finds a quantile without le, a ratio whose sides never pair up, a rate over an instant vector or a fixed window', () => {
    expect(
      check('histogram_quantile(0.95, sum by (service) (rate(http_server_request_duration_seconds_bucket[$__rate_interval])))'),
    ).toEqual(['histogram_quantile() over series without le ({service}): keep le in the grouping']);
    expect(
      check(
        'sum by (service) (rate(http_server_request_duration_seconds_count{status=~"5.."}[$__rate_interval])) / sum by (service, route) (rate(http_server_request_duration_seconds_count[$__rate_interval]))',
      ),
    ).toEqual(['/ matches {service} with {route, service}: no series pair up (group both sides by the same labels)']);
    expect(check('rate(queue_depth)')).toEqual(['rate() takes one range vector']);
    expect(check('rate(delivery_attempts_total[5m])')).toEqual(['rate(delivery_attempts_total[5m]) should use [$__rate_interval]']);
  });
});

describe('the Grafana dashboard deploy/grafana/banking-graph.json', () => {
  it('is a dashboard model with a Prometheus data source variable and service and instance variables from our metrics', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(stringOf(dashboard.raw.title)).not.toBe('');
    expect(stringOf(dashboard.raw.uid)).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(dashboard.variables.find((variable) => variable.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    const service = dashboard.variables.find((variable) => variable.name === 'service');
    expect(service?.query.replace(/\s+/g, '')).toBe('label_values(http_server_request_duration_seconds_count,service)');
    expect(dashboard.variables.map((variable) => variable.name)).toContain('instance');
  });

  it('has query variables that read a label our metrics carry, through ${datasource}', () => {
    const problems: string[] = [];
    for (const variable of dashboard.variables.filter((entry) => entry.type === 'query')) {
      if (variable.datasource?.uid !== DATASOURCE) problems.push(`$${variable.name}: data source ${JSON.stringify(variable.datasource)}`);
      // With no allValue, All stands for the values found, so the process panels show our processes only, not every one Prometheus scrapes.
      if (variable.allValue !== null)
        problems.push(`$${variable.name}: allValue ${variable.allValue} would match series of other applications`);
      const match = LABEL_VALUES.exec(variable.query);
      if (!match) {
        problems.push(`$${variable.name}: ${variable.query} is not label_values(selector, label)`);
        continue;
      }
      const { problems: found, labels } = checkExpression(match[1]!, known);
      problems.push(...found.map((problem) => `$${variable.name}: ${problem}`));
      if (labels && !labels.has(match[2]!)) problems.push(`$${variable.name}: ${match[1]!} has no label ${match[2]!}`);
    }
    expect(problems).toEqual([]);
  });

  it('gives every panel a title, a description, the ${datasource} data source and at least one query, in a row', () => {
    expect(dashboard.rows.map((row) => row.title)).toEqual(['Traffic', 'Gateway', 'Data and events', 'Node']);
    const problems: string[] = [];
    for (const panel of dashboard.panels) {
      const name = `panel ${panel.id} "${panel.title}"`;
      if (panel.title.trim() === '') problems.push(`${name}: no title`);
      if (panel.description.trim() === '') problems.push(`${name}: no description`);
      if (!['timeseries', 'stat'].includes(panel.type)) problems.push(`${name}: type ${panel.type}`);
      if (panel.datasource?.type !== 'prometheus' || panel.datasource.uid !== DATASOURCE)
        problems.push(`${name}: data source ${JSON.stringify(panel.datasource)}`);
      if (panel.targets.length === 0) problems.push(`${name}: no query`);
      if (panel.row === null) problems.push(`${name}: in no row`);
      for (const target of panel.targets) {
        if (target.expr.trim() === '') problems.push(`${name} ${target.refId}: no expression`);
        if (target.datasource && target.datasource.uid !== DATASOURCE)
          problems.push(`${name} ${target.refId}: data source ${JSON.stringify(target.datasource)}`);
      }
      if (new Set(panel.targets.map((target) => target.refId)).size !== panel.targets.length) problems.push(`${name}: repeated refIds`);
      const { x, y, w, h } = panel.gridPos;
      if (![x, y, w, h].every(Number.isInteger) || x < 0 || w < 1 || h < 1 || x + w > 24)
        problems.push(`${name}: gridPos ${JSON.stringify(panel.gridPos)}`);
    }
    const ids = [...dashboard.rows, ...dashboard.panels].map((panel) => panel.id);
    if (new Set(ids).size !== ids.length) problems.push(`repeated panel ids: ${ids.join(', ')}`);
    expect(problems).toEqual([]);
  });

  it('lays no two panels over each other', () => {
    const cells = new Map<string, string>();
    const overlaps: string[] = [];
    for (const panel of [...dashboard.rows, ...dashboard.panels]) {
      const { x, y, w, h } = panel.gridPos;
      for (let row = y; row < y + h; row++) {
        for (let column = x; column < x + w; column++) {
          const taken = cells.get(`${column},${row}`);
          if (taken !== undefined) overlaps.push(`"${panel.title}" over "${taken}" at ${column},${row}`);
          cells.set(`${column},${row}`, panel.title);
        }
      }
    }
    expect([...new Set(overlaps)].slice(0, 5)).toEqual([]);
  });

  it('loads nothing from elsewhere: no URL in it', () => {
    expect(JSON.stringify(dashboard.raw)).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
  });

  it('queries only series of the registry, by labels they carry, with rates over $__rate_interval, and legends of labels the result keeps', () => {
    const problems: string[] = [];
    for (const { target, where } of queries) {
      const { problems: found, labels } = checkExpression(target.expr, known);
      problems.push(...found.map((problem) => `${where}: ${problem}`));
      for (const label of legendLabels(target.legendFormat)) {
        if (labels && !labels.has(label)) problems.push(`${where}: legend {{${label}}} is no label of the result (${show(labels)})`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('uses only variables it defines', () => {
    const defined = new Set(dashboard.variables.map((variable) => variable.name));
    const used = [...queries.map(({ target }) => target.expr), ...dashboard.variables.map((variable) => variable.query)].flatMap(
      variablesIn,
    );
    expect([...new Set(used)].filter((name) => !defined.has(name) && !BUILT_IN_VARIABLES.has(name))).toEqual([]);
  });

  it('has a panel for every metric of metrics.ts and every other metric of ours in the registry', () => {
    const registered = metrics.registry.getMetricsAsArray();
    // The metric objects metrics.ts exports, each of them in the registry (so on /metrics).
    const exported = Object.entries(metrics).filter(
      ([, value]) => value instanceof Counter || value instanceof Gauge || value instanceof Histogram || value instanceof Summary,
    );
    const inRegistry = new Set<unknown>(registered);
    expect(exported.filter(([, value]) => !inRegistry.has(value)).map(([name]) => name)).toEqual([]);
    const exportedObjects = new Set<unknown>(exported.map(([, value]) => value));
    const ours = registered.filter((metric) => exportedObjects.has(metric)).map((metric) => metric.name);
    expect(ours).toContain('http_server_request_duration_seconds');
    const defaults = defaultMetricNames();
    const needed = new Set([...ours, ...registered.map((metric) => metric.name).filter((name) => !defaults.has(name))]);
    const shown = new Set(queries.flatMap(({ target }) => [...checkExpression(target.expr, known).families]));
    expect([...needed].filter((name) => !shown.has(name))).toEqual([]);
    // And the Node panels the dashboard promises.
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_gc_duration_seconds',
    ])
      expect(shown).toContain(name);
  });
});
