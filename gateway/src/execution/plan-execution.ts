import { GraphQLError, isAbstractType, isObjectType, type GraphQLSchema } from 'graphql';
import type { FetchDataRewrite, FetchNode, PlanNode, QueryPlanSelectionNode, ResponsePath } from '@apollo/query-planner';
import { ErrorCode } from '../../../platform/contracts/errors.js';
import { inSpan, SpanKind } from '../../../platform/telemetry/tracing.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import type { GatewayContext } from '../context.js';
import { deepMerge, emptyData, jsonObject, own, setOwn, type DataObject } from './data.js';

/** One operation of a query plan sent to a subgraph. */
export interface SubgraphOperation {
  readonly query: string;
  readonly variables: DataObject;
  readonly operationName: string | undefined;
  /** Part of a mutation's plan: its reads must see its writes, so it shares no fetch in flight. */
  readonly mutation: boolean;
  readonly context: Partial<GatewayContext>;
}

/** An error in a subgraph's answer, as GraphQL over HTTP carries it. */
interface SubgraphError {
  readonly message?: string;
  readonly path?: ReadonlyArray<string | number>;
  readonly extensions?: Readonly<Record<string, unknown>>;
}

/** A subgraph's GraphQL answer. */
export interface SubgraphAnswer {
  readonly data?: DataObject | null;
  readonly errors?: ReadonlyArray<SubgraphError>;
}

/** A subgraph as query plans reach it. A fetch that cannot be answered at all rejects (its fields become null with that error). */
export interface Subgraph {
  send(operation: SubgraphOperation): Promise<SubgraphAnswer>;
}

/** What one run of a query plan works with and gathers. */
export interface PlanRun {
  readonly subgraphs: ReadonlyMap<string, Subgraph>;
  /** The supergraph's schema: the types a fetch's `requires` names. */
  readonly supergraph: GraphQLSchema;
  /** The variables as the client sent them: fetches pass these on. */
  readonly variables: Readonly<Record<string, unknown>>;
  /** The variables coerced, defaults included: conditions read these. */
  readonly coercedVariables: Readonly<Record<string, unknown>>;
  readonly mutation: boolean;
  readonly context: Partial<GatewayContext>;
  readonly data: DataObject;
  readonly errors: Array<GraphQLError | Error>;
  readonly logger: Logger;
}

/** Where in the gathered data a plan node works: the objects under `path` (lists flattened at `@`). */
interface Cursor {
  readonly path: ResponsePath;
  readonly data: unknown;
}

/** Runs `node` of a query plan, merging what each fetch answers into `run.data` and its errors into `run.errors`. */
export function executePlan(run: PlanRun, node: PlanNode): Promise<void> {
  return executeNode(run, node, { path: [], data: run.data });
}

async function executeNode(run: PlanRun, node: PlanNode, cursor: Cursor): Promise<void> {
  switch (node.kind) {
    case 'Sequence':
      for (const child of node.nodes) await executeNode(run, child, cursor);
      return;
    case 'Parallel':
      await Promise.all(node.nodes.map((child) => executeNode(run, child, cursor)));
      return;
    case 'Flatten': {
      const data = flattenAt(cursor.data, node.path, 0);
      if (data === undefined || data === null) return;
      await executeNode(run, node.node, { path: [...cursor.path, ...node.path], data });
      return;
    }
    case 'Fetch':
      try {
        await inSpan('gateway.fetch', SpanKind.INTERNAL, { service: node.serviceName }, () => executeFetch(run, node, cursor));
      } catch (error) {
        run.errors.push(error instanceof Error ? error : new Error(String(error)));
      }
      return;
    case 'Condition': {
      const branch = run.coercedVariables[node.condition] === true ? node.ifClause : node.elseClause;
      if (branch) await executeNode(run, branch, cursor);
      return;
    }
    case 'Defer':
      throw new Error('@defer is not served by this gateway');
  }
}

function flattenAt(value: unknown, path: ResponsePath, from: number): unknown {
  if (from === path.length || value === undefined || value === null) return value;
  const step = path[from]!;
  if (step === '@') return Array.isArray(value) ? value.flatMap((element) => flattenAt(element, path, from + 1)) : undefined;
  if (typeof step !== 'string' || Array.isArray(value) || typeof value !== 'object') return undefined;
  return flattenAt(own(value as DataObject, step), path, from + 1);
}

async function executeFetch(run: PlanRun, fetch: FetchNode, cursor: Cursor): Promise<void> {
  const subgraph = run.subgraphs.get(fetch.serviceName);
  if (!subgraph) throw new Error(`The query plan names an unknown subgraph: ${fetch.serviceName}`);
  const entities = (Array.isArray(cursor.data) ? cursor.data : [cursor.data]).filter(
    (entity): entity is DataObject => typeof entity === 'object' && entity !== null,
  );
  if (entities.length === 0) return;
  const variables = emptyData();
  for (const name of fetch.variableUsages ?? []) {
    const value = own(run.variables, name);
    if (value !== undefined) variables[name] = value;
  }
  const send = async (
    sent: DataObject,
    errorPath: (path: ReadonlyArray<string | number> | undefined) => Array<string | number> | undefined,
  ) => {
    const answer = await subgraph.send({
      query: fetch.operation,
      variables: sent,
      operationName: fetch.operationName,
      mutation: run.mutation,
      context: run.context,
    });
    for (const error of answer.errors ?? []) {
      if (typeof error.extensions?.code !== 'string')
        run.logger.warn('a subgraph answered an error without a code', { subgraph: fetch.serviceName, error: error.message });
      run.errors.push(downstreamError(error, fetch.serviceName, errorPath(error.path)));
    }
    return answer.data ?? null;
  };
  if (!fetch.requires) {
    const data = await send(variables, (path) => (path ? [...cursor.path, ...path] : undefined));
    if (data) applyRewrites(run.supergraph, fetch.outputRewrites, data);
    for (const entity of entities) deepMerge(entity, data);
    return;
  }
  const representations: DataObject[] = [];
  const representationOf: number[] = [];
  entities.forEach((entity, index) => {
    const representation = selectRepresentation(run.supergraph, entity, fetch.requires!);
    if (representation && typeof representation.__typename === 'string') {
      applyRewrites(run.supergraph, fetch.inputRewrites, representation);
      representations.push(representation);
      representationOf.push(index);
    }
  });
  if (representations.length === 0) return;
  if (Object.hasOwn(variables, 'representations')) throw new Error('Variables cannot contain key "representations"');
  variables.representations = representations;
  let entityPaths: Array<Array<string | number>> | null = null;
  const data = await send(variables, (path) => {
    if (!path) return undefined;
    if (path[0] !== '_entities' || typeof path[1] !== 'number') return [...cursor.path, ...path];
    entityPaths ??= concretePaths(run.data, cursor.path);
    const entityPath = entityPaths[representationOf[path[1]] ?? -1];
    return entityPath ? [...entityPath, ...path.slice(2)] : undefined;
  });
  if (data === null) return;
  const received = own(data, '_entities');
  if (!Array.isArray(received)) throw new Error('Expected "data._entities" in response to be an array');
  if (received.length !== representations.length)
    throw new Error(`Expected "data._entities" to contain ${representations.length} elements`);
  received.forEach((entity: unknown, index) => {
    const target = entities[representationOf[index]!]!;
    if (typeof entity === 'object' && entity !== null && !Array.isArray(entity)) {
      const answered = entity as DataObject;
      if (!answered.__typename) answered.__typename = target.__typename;
      applyRewrites(run.supergraph, fetch.outputRewrites, answered);
      deepMerge(target, answered);
    }
  });
}

/** The concrete paths (list indexes in place of `@`) of the non-null objects at `path`, in the order a flatten visits them. */
function concretePaths(data: unknown, path: ResponsePath): Array<Array<string | number>> {
  const found: Array<Array<string | number>> = [];
  const walk = (value: unknown, from: number, at: Array<string | number>) => {
    if (value === null || value === undefined) return;
    if (from === path.length) {
      if (Array.isArray(value)) value.forEach((element, index) => walk(element, from, [...at, index]));
      else found.push(at);
      return;
    }
    const step = path[from]!;
    if (step === '@') {
      if (Array.isArray(value)) value.forEach((element, index) => walk(element, from + 1, [...at, index]));
    } else if (typeof value === 'object' && !Array.isArray(value)) walk(own(value as DataObject, String(step)), from + 1, [...at, step]);
  };
  walk(data, 0, []);
  return found;
}

function isOfType(schema: GraphQLSchema, object: DataObject, typeCondition: string, whenUntyped = false): boolean {
  const typename = own(object, '__typename');
  if (typeof typename !== 'string' || typename === '') return whenUntyped;
  if (typename === typeCondition) return true;
  const condition = schema.getType(typeCondition);
  const runtime = schema.getType(typename);
  return !!condition && isAbstractType(condition) && !!runtime && isObjectType(runtime) && schema.isSubType(condition, runtime);
}

/** The representation of an entity a `requires` selection asks for; null when the entity lacks one of its fields. */
function selectRepresentation(schema: GraphQLSchema, source: DataObject, selections: readonly QueryPlanSelectionNode[]): DataObject | null {
  const result = jsonObject();
  for (const selection of selections) {
    if (selection.kind === 'Field') {
      const key = selection.alias ?? selection.name;
      const value = own(source, key);
      if (value === undefined) return null;
      const nested = selection.selections;
      const select = (element: unknown) =>
        nested && typeof element === 'object' && element !== null ? selectRepresentation(schema, element as DataObject, nested) : element;
      setOwn(result, key, Array.isArray(value) ? value.map(select) : nested && value !== null ? select(value) : value);
    } else if (selection.typeCondition && isOfType(schema, source, selection.typeCondition)) {
      deepMerge(result, selectRepresentation(schema, source, selection.selections));
    }
  }
  return result;
}

const FRAGMENT_STEP = '... on ';

/**
 * Applies a fetch's rewrites to the data it sends or receives: the planner renames a field it had
 * to alias in the subgraph's operation (two fields under one response name in sibling fragments)
 * back to the client's name, or sets a value (an `@interfaceObject`'s `__typename`). A path step
 * `... on T` goes on only through objects of type T (or of no known type).
 */
function applyRewrites(schema: GraphQLSchema, rewrites: readonly FetchDataRewrite[] | undefined, value: unknown): void {
  for (const rewrite of rewrites ?? []) {
    const last = rewrite.path[rewrite.path.length - 1];
    if (last === undefined || last.startsWith(FRAGMENT_STEP))
      throw new Error(`A rewrite that does not end at a field: ${rewrite.path.join('.')}`);
    const change = (object: DataObject) => {
      if (rewrite.kind === 'ValueSetter') setOwn(object, last, rewrite.setValueTo);
      else {
        const current = own(object, last);
        if (current) {
          setOwn(object, rewrite.renameKeyTo, current);
          setOwn(object, last, undefined);
        }
      }
    };
    const walk = (at: unknown, step: number): void => {
      if (Array.isArray(at)) {
        for (const element of at) walk(element, step);
        return;
      }
      if (typeof at !== 'object' || at === null) return;
      if (step === rewrite.path.length - 1) {
        change(at as DataObject);
        return;
      }
      const element = rewrite.path[step]!;
      if (!element.startsWith(FRAGMENT_STEP)) walk(own(at as DataObject, element), step + 1);
      else if (isOfType(schema, at as DataObject, element.slice(FRAGMENT_STEP.length), true)) walk(at, step + 1);
    };
    walk(value, 0);
  }
}

/** A subgraph's error as the client sees it: at its path in the client's answer, naming the subgraph. */
function downstreamError(error: SubgraphError, serviceName: string, path: Array<string | number> | undefined): GraphQLError {
  // A subgraph's error without a code is one it did not mean to answer with: unexpected, as ours are.
  const code = typeof error.extensions?.code === 'string' ? error.extensions.code : ErrorCode.INTERNAL;
  return new GraphQLError(error.message || `Error while fetching subquery from service "${serviceName}"`, {
    path,
    extensions: { ...error.extensions, code, serviceName },
  });
}
