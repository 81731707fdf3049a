import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';

/** A started tracing setup; `shutdown` exports what is pending and unregisters it. */
export interface Tracing {
  shutdown(): Promise<void>;
}

/**
 * Starts OpenTelemetry tracing for this process, under `serviceName`: a tracer provider, the
 * AsyncLocalStorage context manager and W3C trace context, registered globally. With an OTLP
 * endpoint, new traces are sampled at `sampleRatio` (a caller's decision is followed) and
 * exported over OTLP/HTTP; without one nothing is recorded or exported, and the trace ids still
 * reach the logs and the calls. Start it before the services are imported: Apollo's gateway takes
 * its tracer as it loads.
 *
 * The trace SDK's parts are registered directly rather than through `@opentelemetry/sdk-node`,
 * which loads every exporter (gRPC, logs, metrics) and adds a second to every process's start.
 */
export async function startTracing(options: {
  serviceName: string;
  otlpEndpoint: string | undefined;
  sampleRatio: number;
}): Promise<Tracing> {
  const { otlpEndpoint } = options;
  const processors: SpanProcessor[] = [];
  if (otlpEndpoint) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    processors.push(
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: new URL('/v1/traces', otlpEndpoint).href }),
        scheduledDelayMillis: 1000,
      }),
    );
  }
  const ratio = new TraceIdRatioBasedSampler(options.sampleRatio);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    // A caller's sampled flag is not obeyed (a client could make every request recorded): the
    // ratio decides by trace id, the same way at every hop, so one trace is whole or absent.
    sampler: otlpEndpoint ? new ParentBasedSampler({ root: ratio, remoteParentSampled: ratio }) : new AlwaysOffSampler(),
    spanProcessors: processors,
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
