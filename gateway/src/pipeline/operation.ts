import {
  getOperationAST,
  GraphQLError,
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import {
  HeaderMap,
  type BaseContext,
  type GraphQLRequest,
  type GraphQLRequestContext,
  type GraphQLRequestContextDidEncounterErrors,
  type GraphQLRequestContextDidResolveOperation,
  type GraphQLRequestContextResponseForOperation,
  type GraphQLRequestContextWillSendResponse,
  type GraphQLResponse,
} from '@apollo/server';
import { ApolloServerErrorCode } from '@apollo/server/errors';
import type { RequestPlugin, RequestListener } from '../../../platform/graphql/request-plugin.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import { sha256 } from '../../../platform/security/secrets.js';
import type { DocumentReader } from './documents.js';
import { asGraphQLError, badRequest, formatErrors, mergeHead, pipelineError, type AnswerHead, type ErrorFormatting } from './errors.js';
import { apolloLogger } from '../../../platform/graphql/apollo-http.js';

/** What runs an operation once it is parsed, validated and resolved, and its plugins let it through. */
export interface OperationRequest<TContext> {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  readonly operationName: string | null;
  readonly variables: Record<string, unknown>;
  readonly contextValue: TContext;
}

/** Runs a resolved operation: its data, errors and extensions, not yet formatted. */
export type OperationExecutor<TContext> = (request: OperationRequest<TContext>) => Promise<ExecutionResult>;

/** Where clients register documents by hash and look them up (automatic persisted queries). */
interface PersistedQueries {
  get(hash: string): Promise<string | undefined>;
  set(hash: string, text: string): Promise<void>;
}

/** What the operation pipeline is made of. */
export interface OperationPipelineOptions<TContext extends BaseContext> {
  schema: GraphQLSchema;
  documents: DocumentReader;
  execute: OperationExecutor<TContext>;
  plugins: ReadonlyArray<RequestPlugin<TContext>>;
  errors: ErrorFormatting;
  persistedQueries: PersistedQueries;
  logger: Logger;
}

/** Raised when the pipeline itself failed (not the operation): the caller answers a generic 500. */
class PipelineFailure extends Error {
  constructor() {
    super('Internal server error');
  }
}

/** Runs a hook of every listener that has it, at once, as Apollo Server does: the first failure fails the stage. */
async function everyListener<TContext extends BaseContext>(
  listeners: ReadonlyArray<RequestListener<TContext>>,
  hook: (listener: RequestListener<TContext>) => Promise<unknown> | undefined,
): Promise<void> {
  const pending: Array<Promise<unknown>> = [];
  for (const listener of listeners) {
    const running = hook(listener);
    if (running) pending.push(running);
  }
  if (pending.length > 0) await Promise.all(pending);
}

/** Whether graphql-js refused a variable's value (coercion), which is the client's mistake: BAD_USER_INPUT. */
function isBadUserInput(error: GraphQLError): boolean {
  const node = error.nodes?.length === 1 ? error.nodes[0] : undefined;
  if (node?.kind !== Kind.VARIABLE_DEFINITION) return false;
  const name = `Variable "$${node.variable.name.value}" `;
  return ['has invalid value', 'got invalid value ', 'of required type ', 'of non-null type '].some((rest) =>
    error.message.startsWith(name + rest),
  );
}

function asUserInputError(error: GraphQLError): GraphQLError {
  if (error.extensions.code != null || !isBadUserInput(error)) return error;
  return pipelineError(ApolloServerErrorCode.BAD_USER_INPUT, error.message, {
    nodes: error.nodes,
    originalError: error.originalError ?? error,
    extensions: error.extensions,
  });
}

type MutableContext<TContext extends BaseContext> = {
  -readonly [K in keyof GraphQLRequestContext<TContext>]: GraphQLRequestContext<TContext>[K];
};

/**
 * The pipeline of one GraphQL operation, as Apollo Server's runs it for the hooks our plugins use:
 * the document found (by text, or by a persisted query's hash), parsed and validated once for
 * every request that sends it, the operation resolved (`didResolveOperation`), a plugin's answer
 * taken in its place (`responseForOperation`) or the operation run, errors reported
 * (`didEncounterErrors`) and formatted with the status they ask for, and the answer seen last
 * (`willSendResponse`). Apollo Server's codes, statuses and messages are kept.
 */
export function createOperationPipeline<TContext extends BaseContext>(options: OperationPipelineOptions<TContext>) {
  const { schema, documents, execute, plugins, errors: formatting, persistedQueries, logger } = options;
  const forPlugins = apolloLogger(logger);
  const cache: GraphQLRequestContext<TContext>['cache'] = {
    get: async () => undefined,
    set: async () => {},
    delete: async () => false,
  };
  // The gateway sets `cache-control: no-store` on every answer; no cache policy is gathered.
  const overallCachePolicy: GraphQLRequestContext<TContext>['overallCachePolicy'] = {
    replace: () => {},
    restrict: () => {},
    policyIfCacheable: () => null,
  };

  const runOnce = async (request: GraphQLRequest, contextValue: TContext): Promise<GraphQLResponse> => {
    const head: AnswerHead = { status: undefined, headers: new HeaderMap() };
    const context: MutableContext<TContext> = {
      logger: forPlugins,
      cache,
      schema,
      request,
      response: { http: head },
      contextValue,
      metrics: {},
      overallCachePolicy,
      requestIsBatched: false,
    };
    const listeners = (await Promise.all(plugins.map((plugin) => plugin.requestDidStart(context)))).filter(
      (listener): listener is RequestListener<TContext> => listener !== undefined,
    );
    const answered = async (): Promise<GraphQLResponse> => {
      await everyListener(listeners, (listener) => listener.willSendResponse?.(context as GraphQLRequestContextWillSendResponse<TContext>));
      return context.response as GraphQLResponse;
    };
    const encountered = async (errors: ReadonlyArray<GraphQLError>) => {
      context.errors = errors;
      await everyListener(listeners, (listener) =>
        listener.didEncounterErrors?.(context as GraphQLRequestContextDidEncounterErrors<TContext>),
      );
    };
    const refused = async (errors: GraphQLError[]): Promise<GraphQLResponse> => {
      await encountered(errors);
      const formatted = formatErrors(errors, formatting, head);
      context.response.body = { kind: 'single', singleResult: { errors: formatted } };
      head.status ??= 500;
      return answered();
    };

    let { query } = request;
    context.metrics.persistedQueryHit = false;
    context.metrics.persistedQueryRegister = false;
    const persisted = request.extensions?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
    let queryHash: string | undefined;
    let register = false;
    if (persisted) {
      if (persisted.version !== 1) return refused([persistedQueryRefusal('Unsupported persisted query version')]);
      queryHash = String(persisted.sha256Hash);
      if (query === undefined) {
        query = await persistedQueries.get(queryHash);
        if (query === undefined) {
          return refused([
            pipelineError(ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND, 'PersistedQueryNotFound', {
              status: 200,
              headers: [['cache-control', 'private, no-cache, must-revalidate']],
            }),
          ]);
        }
        context.metrics.persistedQueryHit = true;
      } else {
        // A hash that is not a string matches no text (its string form could).
        if (sha256(query) !== persisted.sha256Hash) return refused([persistedQueryRefusal('provided sha does not match query')]);
        register = true;
        context.metrics.persistedQueryRegister = true;
      }
    } else if (!query) {
      return refused([badRequest('GraphQL operations must contain a non-empty `query` or a `persistedQuery` extension.')]);
    }
    context.source = query;
    const read = documents(query, queryHash);
    if ('errors' in read) {
      context.queryHash = queryHash ?? sha256(query);
      return refused(read.errors);
    }
    context.queryHash = read.queryHash;
    context.document = read.document;
    const operation = getOperationAST(read.document, request.operationName) ?? undefined;
    context.operation = operation;
    context.operationName = operation?.name?.value ?? null;
    if (request.http?.method === 'GET' && operation && operation.operation !== OperationTypeNode.QUERY) {
      return refused([
        badRequest(`GET requests only support query operations, not ${operation.operation} operations`, 405, [['allow', 'POST']]),
      ]);
    }
    try {
      await everyListener(listeners, (listener) =>
        listener.didResolveOperation?.(context as GraphQLRequestContextDidResolveOperation<TContext>),
      );
    } catch (error) {
      return refused([asGraphQLError(error)]);
    }
    if (register) {
      persistedQueries.set(read.queryHash, query).catch((error: unknown) => logger.warn('persisted query not kept', { error }));
    }
    if (!operation) return refused([operationResolutionError(request.operationName)]);

    let pluginAnswer: GraphQLResponse | null = null;
    for (const listener of listeners) {
      pluginAnswer = (await listener.responseForOperation?.(context as GraphQLRequestContextResponseForOperation<TContext>)) ?? null;
      if (pluginAnswer) break;
    }
    if (pluginAnswer) {
      context.response.body = pluginAnswer.body;
      mergeHead(head, pluginAnswer.http);
      return answered();
    }
    let result: ExecutionResult;
    try {
      result = await execute({
        schema,
        document: read.document,
        operation,
        operationName: context.operationName,
        variables: request.variables ?? {},
        contextValue,
      });
    } catch (error) {
      return refused([asGraphQLError(error)]);
    }
    const resultErrors = result.errors?.map(asUserInputError);
    let formatted: ReturnType<typeof formatErrors> | undefined;
    if (resultErrors) {
      // As for the operation's run: a listener that fails here answers its error in the operation's place.
      try {
        await encountered(resultErrors);
      } catch (error) {
        return refused([asGraphQLError(error)]);
      }
      const fromErrors: AnswerHead = { status: undefined, headers: new HeaderMap() };
      formatted = formatErrors(resultErrors, formatting, fromErrors);
      // Variables that could not be coerced: nothing ran, and the request was the client's mistake.
      if (resultErrors.length > 0 && result.data === undefined && !fromErrors.status) fromErrors.status = 400;
      mergeHead(head, fromErrors);
    }
    context.response.body = { kind: 'single', singleResult: { ...result, errors: formatted } };
    return answered();
  };

  return {
    /** Runs one operation through the pipeline; a failure of the pipeline itself is logged and raised as `PipelineFailure`. */
    async run(request: GraphQLRequest, contextValue: TContext): Promise<GraphQLResponse> {
      try {
        return await runOnce(request, contextValue);
      } catch (error) {
        logger.error('unexpected error processing request', { error });
        throw new PipelineFailure();
      }
    },
  };
}

/** The pipeline that runs operations; `run` answers one. */
export type OperationPipeline<TContext extends BaseContext> = ReturnType<typeof createOperationPipeline<TContext>>;

/** A refusal of a persisted query's fields: 400 with no code of its own (INTERNAL_SERVER_ERROR, as Apollo Server sends it). */
function persistedQueryRefusal(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { http: { status: 400, headers: new HeaderMap() } } });
}

/** No operation in the document goes by the name asked for (or none was named among several): 400 OPERATION_RESOLUTION_FAILURE. */
function operationResolutionError(operationName: string | undefined): GraphQLError {
  return pipelineError(
    ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE,
    operationName !== undefined
      ? `Unknown operation named "${operationName}".`
      : 'Must provide operation name if query contains multiple operations.',
    { status: 400 },
  );
}
