import { ErrorCode } from '../contracts/errors.js';
import type { BaseContext } from '@apollo/server';
import type { RequestPlugin } from './request-plugin.js';
import { trace } from '@opentelemetry/api';
import { boundedLabel, graphqlOperations } from '../telemetry/metrics.js';

/**
 * Names each GraphQL operation's span (`query AccountTransactions`) with its name, type and the
 * hash of its document (never its variables), and observes its latency and outcome by operation
 * name (a bounded set of names). The span is the one `graphqlHandler` and `graphqlLocal` run the operation in.
 */
export function operationTelemetryPlugin(service: string): RequestPlugin<BaseContext> {
  const names = new Set<string>();
  return {
    async requestDidStart() {
      const started = performance.now();
      let name: string | null = null;
      let type = 'unknown';
      return {
        async didResolveOperation(request) {
          type = request.operation?.operation ?? 'unknown';
          name = request.operationName;
          const span = trace.getActiveSpan();
          span?.updateName(`${type} ${name ?? 'anonymous'}`);
          span?.setAttributes({
            'graphql.operation.name': name ?? 'anonymous',
            'graphql.operation.type': type,
            'graphql.document.hash': request.queryHash,
          });
        },
        async willSendResponse(request) {
          const { body } = request.response;
          const errors = body.kind === 'single' ? (body.singleResult.errors ?? []) : [];
          const codes = [
            ...new Set(errors.map((error) => (typeof error.extensions?.code === 'string' ? error.extensions.code : ErrorCode.INTERNAL))),
          ];
          if (codes.length > 0) trace.getActiveSpan()?.setAttribute('graphql.error.codes', codes);
          // A name joins the label set only with an operation that succeeded: made-up names sent to be
          // refused cannot use up the set. The query planner's suffix (`__payments__0`) is dropped.
          const outcome = codes.length > 0 ? 'error' : 'ok';
          const operation = boundedLabel(names, name?.replace(/__[A-Za-z0-9_]+__\d+$/, ''), { admit: outcome === 'ok' });
          graphqlOperations.observe({ service, operation, type, outcome }, (performance.now() - started) / 1000);
        },
      };
    },
  };
}
