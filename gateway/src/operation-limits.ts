import type { BaseContext } from '@apollo/server';
import type { RequestPlugin } from '../../platform/graphql/request-plugin.js';
import {
  getNamedType,
  getNullableType,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  type DefinitionNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import { detached } from '../../platform/runtime/detached.js';

/** The limits an operation must stay within (OWASP GraphQL cheat sheet: depth, amount, cost). */
export interface OperationLimits {
  /** Nesting of selection sets below the root. */
  maxDepth: number;
  /** Aliased fields in the whole operation: aliases multiply one request into many. */
  maxAliases: number;
  /** Fields at the root of the operation. */
  maxRootFields: number;
  /** Estimated cost: every field 1, times the sizes of the lists it sits in. */
  maxCost: number;
}

/** Selections walked at most while measuring: fragments spread twice at every level double the walk, and the walk must stay cheap. */
const MAX_SELECTIONS_WALKED = 5_000;

/** The root field names of an operation, fragments expanded, each fragment once (spreading one twice merges, it does not repeat). */
function rootFieldNames(
  selectionSet: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  seen = new Set<string>(),
): string[] {
  return selectionSet.selections.flatMap((selection) => {
    if (selection.kind === Kind.FIELD) return selection.name.value.startsWith('__') ? [] : [selection.name.value];
    if (selection.kind === Kind.INLINE_FRAGMENT) return rootFieldNames(selection.selectionSet, fragments, seen);
    const fragment = fragments.get(selection.name.value);
    if (!fragment || seen.has(fragment.name.value)) return [];
    seen.add(fragment.name.value);
    return rootFieldNames(fragment.selectionSet, fragments, seen);
  });
}

/** Root field names by operation, for the documents the pipeline keeps parsed: the same operation node always has the same root fields. */
const rootFieldsByOperation = new WeakMap<OperationDefinitionNode, readonly string[]>();

/** The root field names of `operation` in `document`, as `rootFieldNames` finds them (detached from its text), found once per parsed operation. */
export function rootFieldsOf(operation: OperationDefinitionNode, document: DocumentNode): readonly string[] {
  let fields = rootFieldsByOperation.get(operation);
  if (!fields) {
    fields = rootFieldNames(operation.selectionSet, fragmentsOf(document.definitions)).map(detached);
    rootFieldsByOperation.set(operation, fields);
  }
  return fields;
}

/** The fragments of a document, by name. */
export function fragmentsOf(definitions: readonly DefinitionNode[]): ReadonlyMap<string, FragmentDefinitionNode> {
  return new Map(definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
}

/** The size a list is assumed to have when the operation does not bound it. */
const DEFAULT_LIST_SIZE = 10;
/** Arguments that bound a list's size. */
const SIZE_ARGUMENTS = ['first', 'numberOfRecords', 'limit'];

interface Measure {
  depth: number;
  aliases: number;
  rootFields: number;
  cost: number;
}

/** The size argument's value (`first: 100`), literal or variable, if the field has one. */
function sizeArgument(
  args: readonly { name: { value: string }; value: ValueNode }[],
  variables: Record<string, unknown>,
): number | undefined {
  for (const arg of args) {
    // A size inside an input object (`input: { numberOfRecords: 1000 }`, literal or a variable) counts too.
    const value = SIZE_ARGUMENTS.includes(arg.name.value) ? sizeOf(arg.value, variables) : nestedSize(arg.value, variables);
    if (value !== undefined) return value;
  }
  return undefined;
}

/** A variable's value as the client sent it: only its own members count (a `$constructor` finds no value). */
function variableValue(variables: Record<string, unknown>, name: string): unknown {
  return Object.hasOwn(variables, name) ? variables[name] : undefined;
}

function sizeOf(value: ValueNode, variables: Record<string, unknown>): number | undefined {
  const number =
    value.kind === Kind.INT ? Number(value.value) : value.kind === Kind.VARIABLE ? Number(variableValue(variables, value.name.value)) : NaN;
  return Number.isFinite(number) && number >= 0 ? number : undefined;
}

function nestedSize(value: ValueNode, variables: Record<string, unknown>): number | undefined {
  if (value.kind === Kind.OBJECT) return sizeArgument(value.fields, variables);
  if (value.kind !== Kind.VARIABLE) return undefined;
  const given = variableValue(variables, value.name.value);
  if (given === null || typeof given !== 'object' || Array.isArray(given)) return undefined;
  for (const name of SIZE_ARGUMENTS) {
    const number = Number(Object.hasOwn(given, name) ? (given as Record<string, unknown>)[name] : undefined);
    if (Number.isFinite(number) && number >= 0) return number;
  }
  return undefined;
}

/** Depth, aliases, root fields and cost of an operation, fragments expanded; introspection fields are not counted. */
function measureOperation(
  schema: GraphQLSchema,
  root: GraphQLNamedType,
  selectionSet: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
): Measure {
  const measure: Measure = { depth: 0, aliases: 0, rootFields: 0, cost: 0 };
  let walked = 0;
  // `hint`: a size argument on a field that is not itself a list (a connection's `first`) sizes the list below it (`edges`).
  const visit = (
    type: GraphQLNamedType | undefined,
    set: SelectionSetNode,
    depth: number,
    multiplier: number,
    seen: Set<string>,
    hint?: number,
  ): number => {
    let cost = 0;
    for (const selection of set.selections) {
      walked += 1;
      // Past the budget the operation is too costly to measure, and so too costly to run.
      if (walked > MAX_SELECTIONS_WALKED) return Number.POSITIVE_INFINITY;
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (!fragment || seen.has(fragment.name.value)) continue;
        cost += visit(
          schema.getType(fragment.typeCondition.name.value) ?? type,
          fragment.selectionSet,
          depth,
          multiplier,
          new Set([...seen, fragment.name.value]),
          hint,
        );
        continue;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        cost += visit(
          selection.typeCondition ? (schema.getType(selection.typeCondition.name.value) ?? type) : type,
          selection.selectionSet,
          depth,
          multiplier,
          seen,
          hint,
        );
        continue;
      }
      if (selection.name.value.startsWith('__')) continue;
      if (depth === 0) measure.rootFields += 1;
      if (selection.alias) measure.aliases += 1;
      measure.depth = Math.max(measure.depth, depth + 1);
      const field = type && (isObjectType(type) || isInterfaceType(type)) ? type.getFields()[selection.name.value] : undefined;
      cost += multiplier;
      if (selection.selectionSet) {
        const size = sizeArgument(selection.arguments ?? [], variables);
        const isList = field !== undefined && isListType(getNullableType(field.type));
        const childMultiplier = multiplier * (isList ? (size ?? hint ?? DEFAULT_LIST_SIZE) : 1);
        cost += visit(
          field ? getNamedType(field.type) : undefined,
          selection.selectionSet,
          depth + 1,
          childMultiplier,
          seen,
          isList ? undefined : size,
        );
      }
    }
    return cost;
  };
  measure.cost = visit(root, selectionSet, 0, 1, new Set());
  return measure;
}

/**
 * The measures of operations that declare no variables, by operation node (the pipeline keeps a
 * document parsed, so its nodes are the same from one request to the next): without variables
 * nothing in the measure can change between requests.
 */
const measuresWithoutVariables = new WeakMap<OperationDefinitionNode, { schema: GraphQLSchema; measure: Measure }>();

/** The measure of `operation` with `variables`, or null for an operation type the schema lacks. */
function measureOf(
  operation: OperationDefinitionNode,
  document: DocumentNode,
  schema: GraphQLSchema,
  variables: Record<string, unknown> | undefined,
): Measure | null {
  const invariant = !operation.variableDefinitions?.length;
  const known = invariant ? measuresWithoutVariables.get(operation) : undefined;
  if (known?.schema === schema) return known.measure;
  const root = schema.getRootType(operation.operation);
  if (!root) return null;
  // A variable left out takes its declared default (`$n: Int = 1000`), so the estimate uses it too.
  const defaults = Object.fromEntries(
    (operation.variableDefinitions ?? [])
      .filter((d) => d.defaultValue?.kind === Kind.INT)
      .map((d) => [d.variable.name.value, Number((d.defaultValue as { value: string }).value)]),
  );
  const measure = measureOperation(schema, root, operation.selectionSet, fragmentsOf(document.definitions), {
    ...defaults,
    ...(variables ?? {}),
  });
  if (invariant) measuresWithoutVariables.set(operation, { schema, measure });
  return measure;
}

/**
 * Refuses, before any subgraph is called, an operation over a limit: OPERATION_LIMIT_EXCEEDED
 * (HTTP 400) naming the limit and the measured value. Trusted documents (the REST adapter's own
 * operations among them) were reviewed when registered and are not measured: the documented
 * routes' largest pages (1,000 refunds with their histories) cost more than an ad hoc query may,
 * and their list sizes are bounded by the subgraphs' paging rules (1 to 1,000).
 */
export function operationLimitsPlugin(limits: OperationLimits, trusted: ReadonlyMap<string, string>): RequestPlugin<BaseContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, schema, request, queryHash }) {
          if (!operation || trusted.has(queryHash)) return;
          const measured = measureOf(operation, document, schema, request.variables);
          if (!measured) return;
          const over = (
            [
              ['depth', measured.depth, limits.maxDepth],
              ['aliases', measured.aliases, limits.maxAliases],
              ['root fields', measured.rootFields, limits.maxRootFields],
              ['cost', measured.cost, limits.maxCost],
            ] as const
          ).find(([, value, limit]) => value > limit);
          if (over) {
            const [name, value, limit] = over;
            const measuredText = Number.isFinite(value) ? String(value) : `over ${MAX_SELECTIONS_WALKED} selections to measure`;
            throw appError(ErrorCode.OPERATION_LIMIT_EXCEEDED, `The operation's ${name} is ${measuredText}; at most ${limit} is allowed.`, {
              httpStatus: 400,
            });
          }
        },
      };
    },
  };
}

/** At most this many errors in one answer. */
const MAX_ERRORS = 20;

/**
 * Caps the errors of one answer: an input with N unknown members gets N coercion errors, each
 * echoing the input, so a small request could make an answer many times its size. The first errors are kept,
 * and one more says how many were left out.
 */
export function errorCountPlugin(): RequestPlugin<BaseContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const { errors } = response.body.singleResult;
          if (!errors || errors.length <= MAX_ERRORS) return;
          response.body.singleResult.errors = [
            ...errors.slice(0, MAX_ERRORS),
            {
              message: `${errors.length - MAX_ERRORS} more errors are not shown.`,
              extensions: { code: errors[0]!.extensions?.code ?? ErrorCode.BAD_REQUEST },
            },
          ];
        },
      };
    },
  };
}
