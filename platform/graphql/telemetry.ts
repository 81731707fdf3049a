import type { ApolloServerPlugin } from '@apollo/server';
import { trace } from '@opentelemetry/api';
import { boundedLabel, graphqlOperations } from '../telemetry/metrics.js';

/**
 * Names each GraphQL operation's span (`query AccountTransactions`) with its name, type and the
 * hash of its document (never its variables), and observes its latency and outcome by operation
 * name. The span is the one `apolloHandler` and `apolloLocal` run the operation in.
 */
export function operationTelemetryPlugin(service: string): ApolloServerPlugin {
  const names = new Set<string>();
  return {
    async requestDidStart() {
      const started = performance.now();
      let operation = 'anonymous';
      let type = 'unknown';
      return {
        async didResolveOperation(request) {
          type = request.operation?.operation ?? 'unknown';
          operation = boundedLabel(names, request.operationName);
          const span = trace.getActiveSpan();
          span?.updateName(`${type} ${operation}`);
          span?.setAttributes({ 'graphql.operation.name': operation, 'graphql.operation.type': type, 'graphql.document.hash': request.queryHash });
        },
        async willSendResponse(request) {
          const { body } = request.response;
          const errors = body.kind === 'single' ? body.singleResult.errors ?? [] : [];
          const codes = [...new Set(errors.map((error) => (typeof error.extensions?.code === 'string' ? error.extensions.code : 'INTERNAL')))];
          if (codes.length > 0) trace.getActiveSpan()?.setAttribute('graphql.error.codes', codes);
          graphqlOperations.observe({ service, operation, type, outcome: codes.length > 0 ? 'error' : 'ok' }, (performance.now() - started) / 1000);
        },
      };
    },
  };
}
