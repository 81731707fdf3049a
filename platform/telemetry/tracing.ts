import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { withoutTokens } from '../security/masking.js';

/** The tracer of every span the services make themselves; a no-op until `startTracing` (sdk.ts) registers one. */
const tracer = () => trace.getTracer('banking-graph');

/** The trace and span ids of the active span, for a log line; empty outside a trace. */
export function activeTraceIds(): { traceId?: string; spanId?: string } {
  const span = trace.getSpanContext(context.active());
  return span && trace.isSpanContextValid(span) ? { traceId: span.traceId, spanId: span.spanId } : {};
}

/** Ends `span` as failed when `error` is one, and passes the outcome on. */
async function ending<T>(span: Span, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    // As in the logs: an error's text may print an object that holds a token.
    span.recordException(
      error instanceof Error
        ? { name: error.name, message: withoutTokens(error.message), stack: withoutTokens(error.stack) }
        : withoutTokens(String(error)),
    );
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Runs a request served by this process in a SERVER span that continues the caller's trace
 * (`traceparent` in `headers`). The span is handed to `work`, which names its route and sets its
 * status; the caller ends it.
 */
export function serveInSpan<T>(
  name: string,
  headers: Record<string, string | string[] | undefined>,
  attributes: Attributes,
  work: (span: Span) => T,
): T {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return context.with(trace.setSpan(parent, span), () => work(span));
}

/**
 * Runs a call to another service in a CLIENT span, with the trace context added to the headers
 * it sends (a copy; the caller's are not changed).
 */
export function callInSpan<T>(
  name: string,
  attributes: Attributes,
  headers: Record<string, string>,
  work: (headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, (span) => {
    const carried = { ...headers };
    propagation.inject(context.active(), carried);
    return ending(span, work(carried));
  });
}

/** Runs `work` in a span of its own (an event published, a delivery attempted), a child of the active one. */
export function inSpan<T>(name: string, kind: SpanKind, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { kind, attributes }, (span) => ending(span, work(span)));
}

/** Starts a span as a child of the active one that the caller ends (a database command, from its start and end events). */
export function startChildSpan(name: string, kind: SpanKind, attributes: Attributes): Span {
  return tracer().startSpan(name, { kind, attributes });
}

export { SpanKind, SpanStatusCode, type Span };
