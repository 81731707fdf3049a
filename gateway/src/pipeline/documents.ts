import {
  GraphQLError,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type ParseOptions,
  type ValidationRule,
} from 'graphql';
import { ApolloServerErrorCode, ApolloServerValidationErrorCode } from '@apollo/server/errors';
import { sha256 } from '../../../platform/security/secrets.js';
import { pipelineError } from './errors.js';

/** A document parsed and validated against the schema, with the SHA-256 of its text (hex). */
export interface ValidDocument {
  readonly document: DocumentNode;
  readonly queryHash: string;
}

/** How documents are read: the parser's bounds, whether introspection may be asked for, and whether errors may hint at the schema. */
export interface DocumentOptions {
  schema: GraphQLSchema;
  parseOptions: ParseOptions;
  introspection: boolean;
  /** No "Did you mean …?" in validation errors: with introspection off, they would map the schema. */
  hideSchemaDetails: boolean;
}

/** Refuses `__schema` and `__type` where introspection is off (as Apollo Server words it, for clients that match on it). */
const noIntrospection: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value === '__schema' || node.name.value === '__type') {
      context.reportError(
        new GraphQLError(
          'GraphQL introspection is not allowed by Apollo Server, but the query contained __schema or __type. To enable introspection, pass introspection: true to ApolloServer in production',
          { nodes: [node], extensions: { validationErrorCode: ApolloServerValidationErrorCode.INTROSPECTION_DISABLED } },
        ),
      );
    }
  },
});

/**
 * Documents kept at most, the tokens they may hold together (a parsed document keeps every token
 * of its text, a few hundred bytes each) and their text (a long string or comment is one token).
 */
const MAX_DOCUMENTS = 1_000;
const MAX_DOCUMENT_TOKENS = 100_000;
const MAX_DOCUMENT_TEXT = 4 * 1024 * 1024;

/** The tokens a parsed document holds, comments included. */
function tokensOf(document: DocumentNode): number {
  let count = 0;
  for (let token = document.loc?.startToken ?? null; token; token = token.next) count += 1;
  return count;
}

/**
 * Reads documents: parsed and validated once, then kept by their text (the least recently used
 * dropped first, within a count, a number of tokens and a length of text) for every request that
 * sends the same one. A document that does not parse
 * (GRAPHQL_PARSE_FAILED) or validate (GRAPHQL_VALIDATION_FAILED) is refused with 400 each time, not kept.
 */
export function createDocumentReader(options: DocumentOptions) {
  const rules = options.introspection ? specifiedRules : [...specifiedRules, noIntrospection];
  const kept = new Map<string, ValidDocument & { readonly tokens: number }>();
  let keptText = 0;
  let keptTokens = 0;
  return (text: string, knownHash?: string): ValidDocument | { errors: GraphQLError[] } => {
    const found = kept.get(text);
    if (found) {
      kept.delete(text);
      kept.set(text, found);
      return found;
    }
    let document: DocumentNode;
    try {
      document = parse(text, options.parseOptions);
    } catch (error) {
      const syntax = error instanceof GraphQLError ? error : new GraphQLError(String(error));
      return {
        errors: [
          pipelineError(ApolloServerErrorCode.GRAPHQL_PARSE_FAILED, syntax.message, {
            source: syntax.source,
            positions: syntax.positions,
            originalError: syntax,
            status: 400,
            extensions: syntax.extensions,
          }),
        ],
      };
    }
    const invalid = validate(options.schema, document, rules);
    if (invalid.length > 0) {
      return {
        errors: invalid.map((error) =>
          pipelineError(
            ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED,
            options.hideSchemaDetails ? error.message.replace(/ ?Did you mean(.+?)\?$/, '') : error.message,
            { nodes: error.nodes, originalError: error.originalError ?? error, status: 400, extensions: error.extensions },
          ),
        ),
      };
    }
    const valid = { document, queryHash: knownHash ?? sha256(text), tokens: tokensOf(document) };
    kept.set(text, valid);
    keptText += text.length;
    keptTokens += valid.tokens;
    for (const [oldest, { tokens }] of kept) {
      if (kept.size <= MAX_DOCUMENTS && keptText <= MAX_DOCUMENT_TEXT && keptTokens <= MAX_DOCUMENT_TOKENS) break;
      kept.delete(oldest);
      keptText -= oldest.length;
      keptTokens -= tokens;
    }
    return valid;
  };
}

/** Reads a document's text: its parsed, validated document, or the errors that refuse it. */
export type DocumentReader = ReturnType<typeof createDocumentReader>;
