import { executeSync, getVariableValues, GraphQLError, OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import { operationFromDocument, Supergraph } from '@apollo/federation-internals';
import { QueryPlanner, type PlanNode, type QueryPlan } from '@apollo/query-planner';
import { SpanKind, SpanStatusCode, startChildSpan } from '../../../platform/telemetry/tracing.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import type { GatewayContext } from '../context.js';
import { asGraphQLError } from '../pipeline/errors.js';
import type { OperationExecutor, OperationRequest } from '../pipeline/operation.js';
import { fragmentsOf } from '../operation-limits.js';
import { emptyData } from './data.js';
import { executePlan, type Subgraph } from './plan-execution.js';
import { applyResultShape, compileResultShape, type ResultShape } from './result-shape.js';

type GatewayRequest = OperationRequest<GatewayContext>;

/** An operation made ready once, for every request that sends the same document: its query plan and the shape of its answer. */
interface PreparedOperation {
  readonly plan: QueryPlan;
  readonly shape: ResultShape;
}

/** The federation the gateway serves: the supergraph's API schema, and an executor that plans with Apollo's query planner. */
export interface Federation {
  /** The API schema as the supergraph defines it, before the gateway adds what it serves itself. */
  readonly apiSchema: GraphQLSchema;
  /** Runs an operation over the subgraphs (validated against the API schema or one that extends it). */
  readonly execute: OperationExecutor<GatewayContext>;
}

/** Throws when a plan holds a step this executor does not run (`@fromContext`, `@defer`: features this supergraph does not use). */
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
      if (node.contextRewrites?.length)
        throw new Error(`A query plan passes a context (@fromContext), which this gateway does not do: ${node.serviceName}`);
      return;
    case 'Defer':
      throw new Error('A query plan with @defer, which this gateway does not serve');
  }
}

/**
 * Plans with Apollo's query planner (`@apollo/query-planner`) over the supergraph in
 * `supergraphSdl`, and runs each plan over `subgraphs` (by the supergraph's subgraph names). An
 * operation is planned and its answer's shape compiled once, not once a request, and kept with its
 * document (so is an operation that cannot be planned): the request pipeline's document store
 * bounds both, since what is made ready can hold on to its document's whole text (a name taken
 * from a text is a slice of it).
 */
export function createFederation(supergraphSdl: string, subgraphs: ReadonlyMap<string, Subgraph>, logger: Logger): Federation {
  const supergraph = Supergraph.build(supergraphSdl);
  const federatedApi = supergraph.apiSchema();
  const supergraphSchema = supergraph.schema.toGraphQLJSSchema();
  const planner = new QueryPlanner(supergraph);
  const apiSchema = federatedApi.toGraphQLJSSchema();
  for (const { name } of supergraph.subgraphsMetadata())
    if (!subgraphs.has(name)) throw new Error(`The supergraph names a subgraph the gateway cannot reach: ${name}`);
  const prepared = new WeakMap<DocumentNode, Map<string | null, PreparedOperation | GraphQLError>>();
  const preparedFor = (request: GatewayRequest): PreparedOperation | GraphQLError => {
    let ofDocument = prepared.get(request.document);
    if (!ofDocument) prepared.set(request.document, (ofDocument = new Map<string | null, PreparedOperation | GraphQLError>()));
    // Only the operations the document holds get here: another name is refused before execution.
    let operation = ofDocument.get(request.operationName);
    if (!operation) {
      try {
        operation = prepare(request);
      } catch (error) {
        operation = asGraphQLError(error);
      }
      ofDocument.set(request.operationName, operation);
    }
    return operation;
  };

  const prepare = (request: GatewayRequest): PreparedOperation => {
    const span = startChildSpan('gateway.plan', SpanKind.INTERNAL, { 'graphql.operation.name': request.operationName ?? '' });
    try {
      const operation = operationFromDocument(federatedApi, request.document, { operationName: request.operationName ?? undefined });
      const plan = planner.buildQueryPlan(operation);
      if (plan.node?.kind === 'Subscription') throw new Error('A subscription reached the query planner');
      checkPlan(plan.node);
      return { plan, shape: compileResultShape(request.schema, request.operation, fragmentsOf(request.document.definitions)) };
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  };

  const execute: OperationExecutor<GatewayContext> = async (request: GatewayRequest) => {
    const operation = preparedFor(request);
    if (operation instanceof GraphQLError) return { errors: [operation] };
    const variables = request.variables;
    const coercion = getVariableValues(request.schema, request.operation.variableDefinitions ?? [], variables);
    if (coercion.errors) return { errors: coercion.errors };
    // Read by the variable names of the operation, which a client chose (`$__proto__` is one).
    const coerced = Object.assign(emptyData(), coercion.coerced);
    const data = emptyData();
    const errors: Array<GraphQLError | Error> = [];
    const node = operation.plan.node;
    if (node && node.kind !== 'Subscription')
      await executePlan(
        {
          subgraphs,
          supergraph: supergraphSchema,
          variables,
          coercedVariables: coerced,
          mutation: request.operation.operation === OperationTypeNode.MUTATION,
          context: request.contextValue,
          data,
          errors,
          logger,
        },
        node,
      );
    const introspection = operation.shape.introspection;
    const introspected = introspection
      ? (executeSync({ schema: request.schema, document: introspection, variableValues: variables }).data ?? null)
      : null;
    let shaped: ReturnType<typeof applyResultShape>;
    try {
      shaped = applyResultShape(operation.shape, request.schema, data, coerced, introspected);
    } catch (error) {
      // A subgraph's answer of the wrong kind (an object where a list is due): no data, every error.
      return { errors: [...errors, error].map((each) => asGraphQLError(each)), data: null };
    }
    if (errors.length > 0) return { errors: errors.map((each) => asGraphQLError(each)), data: shaped.data };
    // As Apollo's gateway does: a subgraph's value that breaks the API schema is reported beside the data, not as an error of the operation.
    return shaped.problems.length > 0 ? { data: shaped.data, extensions: { valueCompletion: shaped.problems } } : { data: shaped.data };
  };

  return { apiSchema, execute };
}
