import {
  executeSync,
  getVariableValues,
  GraphQLError,
  Kind,
  OperationTypeNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { operationFromDocument, Supergraph } from '@apollo/federation-internals';
import { QueryPlanner, type PlanNode, type QueryPlan } from '@apollo/query-planner';
import type { ApolloServerOptionsWithGateway } from '@apollo/server';
import { SpanKind, SpanStatusCode, startChildSpan } from '../../../platform/telemetry/tracing.js';
import type { GatewayContext } from '../context.js';
import { emptyData } from './data.js';
import { executePlan, type Subgraph } from './plan-execution.js';
import { applyResultShape, compileResultShape, type ResultShape } from './result-shape.js';

/** Apollo Server's contract with a gateway: the schema it is handed and the executor it calls. */
type GatewayInterface = ApolloServerOptionsWithGateway<GatewayContext>['gateway'];
/** What runs an operation for Apollo Server once it is parsed, validated and its context built. */
export type GatewayExecutor = NonNullable<Awaited<ReturnType<GatewayInterface['load']>>['executor']>;
type GatewayRequest = Parameters<GatewayExecutor>[0];

/** An operation made ready once, for every request that sends the same document: its query plan and the shape of its answer. */
interface PreparedOperation {
  readonly plan: QueryPlan;
  readonly shape: ResultShape;
}

/** The gateway Apollo Server runs on: the supergraph's API schema, and an executor that plans with Apollo's query planner. */
export interface Federation {
  /** The API schema as the supergraph defines it, before the gateway adds what it serves itself. */
  readonly apiSchema: GraphQLSchema;
  /** Apollo Server's gateway, answering with `served(apiSchema)` and the executor `wrap` makes of the federation's. */
  gateway(served: GraphQLSchema, wrap: (executor: GatewayExecutor) => GatewayExecutor): GatewayInterface;
}

/** Throws when a plan holds a step this executor does not run (none of them arise from this supergraph's features). */
function checkPlan(node: PlanNode | undefined): void {
  if (!node) return;
  switch (node.kind) {
    case 'Sequence':
    case 'Parallel':
      node.nodes.forEach(checkPlan);
      return;
    case 'Flatten':
      checkPlan(node.node);
      return;
    case 'Condition':
      checkPlan(node.ifClause);
      checkPlan(node.elseClause);
      return;
    case 'Fetch':
      if (node.inputRewrites?.length || node.outputRewrites?.length || node.contextRewrites?.length)
        throw new Error(
          `A query plan rewrites data (from @interfaceObject or @fromContext), which this gateway does not do: ${node.serviceName}`,
        );
      return;
    case 'Defer':
      throw new Error('A query plan with @defer, which this gateway does not serve');
  }
}

/**
 * Plans with Apollo's query planner (`@apollo/query-planner`) over the supergraph in
 * `supergraphSdl`, and runs each plan over `subgraphs` (by the supergraph's subgraph names). An
 * operation is planned and its answer's shape compiled once, kept with Apollo Server's parsed
 * document (so bounded by its document cache), not once a request.
 */
export function createFederation(supergraphSdl: string, subgraphs: ReadonlyMap<string, Subgraph>): Federation {
  const supergraph = Supergraph.build(supergraphSdl);
  const federatedApi = supergraph.apiSchema();
  const supergraphSchema = supergraph.schema.toGraphQLJSSchema();
  const planner = new QueryPlanner(supergraph);
  const apiSchema = federatedApi.toGraphQLJSSchema();
  for (const { name } of supergraph.subgraphsMetadata())
    if (!subgraphs.has(name)) throw new Error(`The supergraph names a subgraph the gateway cannot reach: ${name}`);
  const prepared = new WeakMap<OperationDefinitionNode, PreparedOperation>();

  const prepare = (request: GatewayRequest): PreparedOperation => {
    const span = startChildSpan('gateway.plan', SpanKind.INTERNAL, { 'graphql.operation.name': request.operationName ?? '' });
    try {
      const operation = operationFromDocument(federatedApi, request.document, { operationName: request.operationName ?? undefined });
      const plan = planner.buildQueryPlan(operation);
      if (plan.node?.kind === 'Subscription') throw new Error('A subscription reached the query planner');
      checkPlan(plan.node);
      const fragments = new Map(
        request.document.definitions
          .filter((definition): definition is FragmentDefinitionNode => definition.kind === Kind.FRAGMENT_DEFINITION)
          .map((fragment) => [fragment.name.value, fragment]),
      );
      return { plan, shape: compileResultShape(request.schema, request.operation, fragments) };
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  };

  const execute: GatewayExecutor = async (request: GatewayRequest) => {
    let operation = prepared.get(request.operation);
    if (!operation) {
      try {
        operation = prepare(request);
      } catch (error) {
        if (error instanceof GraphQLError) return { errors: [error] };
        throw error;
      }
      prepared.set(request.operation, operation);
    }
    const variables = request.request.variables ?? {};
    const coerced = getVariableValues(request.schema, request.operation.variableDefinitions ?? [], variables);
    if (coerced.errors) return { errors: coerced.errors };
    const data = emptyData();
    const errors: Array<GraphQLError | Error> = [];
    const node = operation.plan.node;
    if (node && node.kind !== 'Subscription')
      await executePlan(
        {
          subgraphs,
          supergraph: supergraphSchema,
          variables,
          coercedVariables: coerced.coerced,
          mutation: request.operation.operation === OperationTypeNode.MUTATION,
          context: request.context as Partial<GatewayContext>,
          data,
          errors,
        },
        node,
      );
    const introspection = operation.shape.introspection;
    const introspected = introspection
      ? (executeSync({ schema: request.schema, document: introspection, variableValues: variables }).data ?? null)
      : null;
    const shaped = applyResultShape(operation.shape, request.schema, data, coerced.coerced, introspected);
    if (errors.length > 0)
      return {
        // An error that is not a GraphQL one is unexpected: Apollo Server answers it with a generic message and logs it.
        errors: errors.map((error) => (error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error }))),
        data: shaped.data,
      };
    // As Apollo's gateway does: a subgraph's value that breaks the API schema is reported beside the data, not as an error of the operation.
    return shaped.problems.length > 0 ? { data: shaped.data, extensions: { valueCompletion: shaped.problems } } : { data: shaped.data };
  };

  return {
    apiSchema,
    gateway(served, wrap) {
      const listeners = new Set<Parameters<GatewayInterface['onSchemaLoadOrUpdate']>[0]>();
      return {
        onSchemaLoadOrUpdate(callback) {
          listeners.add(callback);
          return () => listeners.delete(callback);
        },
        async load() {
          for (const listener of listeners) listener({ apiSchema: served, coreSupergraphSdl: supergraphSdl });
          return { executor: wrap(execute) };
        },
        async stop() {},
      };
    },
  };
}
