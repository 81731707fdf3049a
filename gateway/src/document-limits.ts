import { GraphQLError, Lexer, Source, TokenKind } from 'graphql';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import { documentRefusals } from '../../platform/telemetry/metrics.js';
import { TextMemory } from './text-memory.js';

/** The bounds of a GraphQL document's text, checked before it is parsed. */
export interface DocumentLimits {
  /** Bytes of the document's text (UTF-8). */
  maxBytes: number;
  /** Lexical tokens (names, punctuators, values; comments not counted), as graphql-js's parser `maxLexicalTokens` counts them. */
  maxTokens: number;
}

/**
 * Why a document's text is refused before parsing, or null when it is within its limits. The size
 * is checked first, without reading the text; the tokens are counted by graphql-js's own lexer,
 * which stops at the first token past the limit, so the work is bounded by the limits, not by
 * what the client sent. A text the lexer cannot read is left to the parser, which refuses it.
 */
export function documentOverLimits(text: string, limits: DocumentLimits): { limit: 'bytes' | 'tokens'; message: string } | null {
  // Every UTF-16 unit is at least one UTF-8 byte: a long text is refused without being read.
  if (text.length > limits.maxBytes || Buffer.byteLength(text, 'utf8') > limits.maxBytes) {
    return { limit: 'bytes', message: `The GraphQL document is over ${limits.maxBytes} bytes.` };
  }
  const lexer = new Lexer(new Source(text));
  try {
    for (let tokens = 0; lexer.advance().kind !== TokenKind.EOF;) {
      tokens += 1;
      if (tokens > limits.maxTokens) return { limit: 'tokens', message: `The GraphQL document has over ${limits.maxTokens} tokens.` };
    }
  } catch (error) {
    if (error instanceof GraphQLError) return null;
    throw error;
  }
  return null;
}

/**
 * The refusal of a document over its limits: OPERATION_LIMIT_EXCEEDED (HTTP 400) naming the
 * limit, counted by `gateway_document_refusals_total`; null when the document is within them.
 * `via` names the path it came by (`http`, `subscription`) for the metric.
 */
export function refuseDocument(text: string, limits: DocumentLimits, via: 'http' | 'subscription'): GraphQLError | null {
  const over = documentOverLimits(text, limits);
  if (!over) return null;
  documentRefusals.inc({ limit: over.limit, via });
  return appError(ErrorCode.OPERATION_LIMIT_EXCEEDED, over.message, { httpStatus: 400 });
}

/**
 * `refuseDocument` for the documents of one path, remembering the texts found within the limits
 * (bounded, oldest out): the same text is always within them, and a client's documents recur.
 */
export function documentCheck(limits: DocumentLimits, via: 'http' | 'subscription'): (text: string) => GraphQLError | null {
  const within = new TextMemory<true>(1000, 8 * 1024 * 1024);
  return (text) => {
    if (within.get(text)) return null;
    const refusal = refuseDocument(text, limits, via);
    if (!refusal) within.set(text, true);
    return refusal;
  };
}
