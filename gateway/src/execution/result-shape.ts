import {
  GraphQLError,
  GraphQLBoolean,
  GraphQLFloat,
  GraphQLID,
  GraphQLInt,
  GraphQLString,
  Kind,
  isAbstractType,
  isEnumType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLLeafType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';
import { ErrorCode } from '../../../platform/contracts/errors.js';
import { jsonObject, own, setOwn, type DataObject } from './data.js';

/** Whether a `@skip`/`@include` lets a selection in, given the operation's coerced variables. */
type Inclusion = (variables: Readonly<Record<string, unknown>>) => boolean;

/** How the value of one field or list element is checked and copied into the answer. */
type ValueShape =
  | { readonly kind: 'non-null'; readonly of: ValueShape; readonly ofTypeName: string }
  | { readonly kind: 'list'; readonly of: ValueShape; readonly typeName: string }
  | { readonly kind: 'composite'; readonly type: GraphQLCompositeType; readonly items: readonly Item[] }
  | { readonly kind: 'leaf'; readonly type: GraphQLLeafType; readonly valid: (value: unknown) => boolean };

/** One selection of a selection set, compiled against the API schema. */
type Item =
  | {
      readonly kind: 'field';
      readonly responseKey: string;
      readonly included: Inclusion | null;
      readonly parentTypeName: string;
      readonly value: ValueShape;
    }
  | { readonly kind: 'typename'; readonly responseKey: string; readonly included: Inclusion | null }
  | { readonly kind: 'introspection'; readonly responseKey: string; readonly included: Inclusion | null }
  | {
      readonly kind: 'fragment';
      readonly typeCondition: GraphQLCompositeType | null;
      readonly included: Inclusion | null;
      readonly items: readonly Item[];
    };

/**
 * A client's operation compiled once against the API schema: what the answer holds, in the order
 * the client asked, with which types and nullability. Applied to the data the query plan gathered,
 * it drops what the plan fetched only for its own use (keys, `__typename`s), checks every value
 * against the API schema and turns a `null` where none may be into a `null` of the nearest
 * nullable parent, as a GraphQL server's execution would.
 */
export interface ResultShape {
  readonly root: GraphQLCompositeType;
  readonly items: readonly Item[];
  /** The root's introspection fields (`__schema`, `__type`, in fragments too) alone, to be answered from the schema; null when it has none. */
  readonly introspection: DocumentNode | null;
}

const INTEGER = /^[+-]?\d+$/;

function leafValidator(type: GraphQLLeafType): (value: unknown) => boolean {
  if (isEnumType(type)) {
    const names = new Set(type.getValues().map((value) => value.name));
    return (value) => typeof value === 'string' && names.has(value);
  }
  switch (type) {
    case GraphQLBoolean:
      return (value) => typeof value === 'boolean';
    case GraphQLInt:
      return (value) => typeof value === 'number' && Number.isFinite(value) && INTEGER.test(String(value));
    case GraphQLID:
      return (value) => typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value) && INTEGER.test(String(value)));
    case GraphQLFloat:
      return (value) => typeof value === 'number' && Number.isFinite(value);
    case GraphQLString:
      return (value) => typeof value === 'string';
    default:
      // A custom scalar's serialization is its subgraph's: any JSON value passes.
      return () => true;
  }
}

function inclusionOf(directives: readonly DirectiveNode[] | undefined): Inclusion | null {
  const tests: Inclusion[] = [];
  for (const directive of directives ?? []) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    const argument = directive.arguments?.find((a) => a.name.value === 'if')?.value;
    if (!argument) continue;
    const wanted = name === 'include';
    if (argument.kind === Kind.BOOLEAN) {
      if (argument.value !== wanted) return () => false;
    } else if (argument.kind === Kind.VARIABLE) {
      const variable = argument.name.value;
      tests.push((variables) => variables[variable] === wanted);
    }
  }
  if (tests.length === 0) return null;
  return tests.length === 1 ? tests[0]! : (variables) => tests.every((test) => test(variables));
}

/** Compiles `operation` (validated against `schema`) with the document's fragments. */
export function compileResultShape(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): ResultShape {
  const root = schema.getRootType(operation.operation);
  if (!root) throw new Error(`The schema has no ${operation.operation} type`);

  const valueShape = (type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined): ValueShape => {
    if (isNonNullType(type)) return { kind: 'non-null', of: valueShape(type.ofType, selectionSet), ofTypeName: String(type.ofType) };
    if (isListType(type)) return { kind: 'list', of: valueShape(type.ofType, selectionSet), typeName: String(type) };
    if (isObjectType(type) || isAbstractType(type)) {
      if (!selectionSet) throw new Error(`A selection of ${type.name} without a selection set`);
      return { kind: 'composite', type, items: itemsOf(type, selectionSet) };
    }
    return { kind: 'leaf', type, valid: leafValidator(type) };
  };

  const itemsOf = (parent: GraphQLCompositeType, selectionSet: SelectionSetNode): Item[] =>
    selectionSet.selections.map((selection): Item => {
      const included = inclusionOf(selection.directives);
      if (selection.kind === Kind.FIELD) return fieldItem(parent, selection, included);
      const fragment = selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
      if (!fragment) throw new Error(`Unknown fragment ${selection.kind === Kind.FRAGMENT_SPREAD ? selection.name.value : ''}`);
      const conditionName = fragment.typeCondition?.name.value;
      const typeCondition = conditionName ? (schema.getType(conditionName) as GraphQLCompositeType | undefined) : undefined;
      if (conditionName && !typeCondition) throw new Error(`Unknown type ${conditionName}`);
      return {
        kind: 'fragment',
        typeCondition: typeCondition ?? null,
        included,
        items: itemsOf(typeCondition ?? parent, fragment.selectionSet),
      };
    });

  const fieldItem = (parent: GraphQLCompositeType, field: FieldNode, included: Inclusion | null): Item => {
    const responseKey = field.alias?.value ?? field.name.value;
    const name = field.name.value;
    if (name === '__typename') return { kind: 'typename', responseKey, included };
    if (name === '__schema' || name === '__type') return { kind: 'introspection', responseKey, included };
    const definition = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
    if (!definition) throw new Error(`Unknown field ${parent.name}.${name}`);
    return { kind: 'field', responseKey, included, parentTypeName: parent.name, value: valueShape(definition.type, field.selectionSet) };
  };

  const isIntrospection = (field: FieldNode) => field.name.value === '__schema' || field.name.value === '__type';
  // The root's introspection fields, with the fragments and directives they sit under, and nothing else.
  const introspectionOf = (selectionSet: SelectionSetNode): SelectionNode[] =>
    selectionSet.selections.flatMap((selection): SelectionNode[] => {
      if (selection.kind === Kind.FIELD) return isIntrospection(selection) ? [selection] : [];
      const fragment = selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
      if (!fragment) return [];
      const selections = introspectionOf(fragment.selectionSet);
      if (selections.length === 0) return [];
      return [
        {
          kind: Kind.INLINE_FRAGMENT,
          typeCondition: fragment.typeCondition,
          directives: selection.directives,
          selectionSet: { kind: Kind.SELECTION_SET, selections },
        },
      ];
    });
  const introspection = introspectionOf(operation.selectionSet);
  return {
    root,
    items: itemsOf(root, operation.selectionSet),
    introspection:
      introspection.length === 0
        ? null
        : {
            kind: Kind.DOCUMENT,
            // The fragments stay: an introspection field's own selections may spread them.
            definitions: [{ ...operation, selectionSet: { kind: Kind.SELECTION_SET, selections: introspection } }, ...fragments.values()],
          },
  };
}

/** What shaping one answer needs besides the data: the schema, the variables, and where problems go. */
interface ShapingState {
  readonly schema: GraphQLSchema;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly introspected: DataObject | null;
  readonly problems: GraphQLError[];
  readonly path: Array<string | number>;
  /** Set by each `shapeValue`: its value must make its parent null. */
  invalid: boolean;
  /** Set by each `shapeValue`: a problem under it is already reported. */
  reported: boolean;
}

/**
 * The answer to the client: `data` shaped by `shape`, and the problems found in the subgraphs'
 * values (an invalid value, a `null` where none may be), which make the value or its nearest
 * nullable parent `null`.
 */
export function applyResultShape(
  shape: ResultShape,
  schema: GraphQLSchema,
  data: DataObject,
  variables: Readonly<Record<string, unknown>>,
  introspected: DataObject | null,
): { data: DataObject | null; problems: GraphQLError[] } {
  const state: ShapingState = { schema, variables, introspected, problems: [], path: [], invalid: false, reported: false };
  const output = jsonObject();
  const bubbled = shapeSelection(shape.items, data, output, state, shape.root);
  return { data: bubbled ? null : output, problems: state.problems };
}

function problem(state: ShapingState, message: string): void {
  state.problems.push(new GraphQLError(message, { path: [...state.path], extensions: { code: ErrorCode.INTERNAL } }));
}

function describeLast(state: ShapingState, type: string | GraphQLCompositeType | GraphQLLeafType, parentTypeName: string): string {
  const last = state.path[state.path.length - 1];
  return typeof last === 'string' ? `field ${parentTypeName}.${last}` : `array element of type ${String(type)} at index ${String(last)}`;
}

function conditionApplies(
  state: ShapingState,
  condition: GraphQLCompositeType | null,
  typename: unknown,
  parent: GraphQLCompositeType,
): boolean {
  if (!condition) return true;
  const runtime = typeof typename === 'string' && typename !== '' ? state.schema.getType(typename) : parent;
  if (!runtime) return false;
  if (runtime === condition) return true;
  return isAbstractType(condition) && (isObjectType(runtime) || isInterfaceType(runtime)) && state.schema.isSubType(condition, runtime);
}

/** Copies `items` of `input` into `output`; true when a `null` must replace the whole object. */
function shapeSelection(
  items: readonly Item[],
  input: DataObject,
  output: DataObject,
  state: ShapingState,
  parent: GraphQLCompositeType,
): boolean {
  for (const item of items) {
    if (item.included && !item.included(state.variables)) continue;
    switch (item.kind) {
      case 'introspection':
        if (own(output, item.responseKey) === undefined)
          setOwn(output, item.responseKey, own(state.introspected, item.responseKey) ?? null);
        break;
      case 'typename': {
        if (own(output, item.responseKey) !== undefined) break;
        let name = own(input, item.responseKey) ?? null;
        if (name === null && item.responseKey !== '__typename') name = own(input, '__typename') ?? null;
        const type = (typeof name === 'string' ? state.schema.getType(name) : undefined) ?? parent;
        if (!isObjectType(type)) return true;
        setOwn(output, item.responseKey, type.name);
        break;
      }
      case 'field': {
        state.path.push(item.responseKey);
        const updated = shapeValue(
          item.value,
          own(output, item.responseKey),
          own(input, item.responseKey) ?? null,
          state,
          item.parentTypeName,
        );
        setOwn(output, item.responseKey, updated);
        state.path.pop();
        if (state.invalid) return true;
        break;
      }
      case 'fragment':
        if (conditionApplies(state, item.typeCondition, own(input, '__typename'), parent))
          if (shapeSelection(item.items, input, output, state, item.typeCondition ?? parent)) return true;
        break;
    }
  }
  return false;
}

/** Ends a `shapeValue`: records whether its value must make its parent null and whether a problem under it is reported, and answers the value. */
function settled(state: ShapingState, value: unknown, reported = false, invalid = false): unknown {
  state.invalid = invalid;
  state.reported = reported;
  return value;
}

/** The value to answer for `input` (merged into `existing` when a field is selected twice); sets `state.invalid` and `state.reported`. */
function shapeValue(shape: ValueShape, existing: unknown, input: unknown, state: ShapingState, parentTypeName: string): unknown {
  if (existing === null || (existing !== undefined && shape.kind === 'leaf')) return settled(state, existing);
  switch (shape.kind) {
    case 'non-null': {
      const updated = shapeValue(shape.of, existing, input, state, parentTypeName);
      if (updated !== null) return settled(state, updated);
      if (!state.reported) problem(state, `Cannot return null for non-nullable ${describeLast(state, shape.ofTypeName, parentTypeName)}.`);
      return settled(state, null, true, true);
    }
    case 'list': {
      if (input === null) return settled(state, null);
      if (!Array.isArray(input) || (existing !== undefined && (!Array.isArray(existing) || existing.length !== input.length)))
        throw new Error(`A subgraph answered a value that is not a list for ${describeLast(state, shape.typeName, parentTypeName)}`);
      const updated: unknown[] = new Array(input.length);
      let nullify = false;
      let reported = false;
      for (let index = 0; index < input.length; index++) {
        state.path.push(index);
        updated[index] = shapeValue(
          shape.of,
          existing === undefined ? undefined : (existing as unknown[])[index],
          input[index] ?? null,
          state,
          parentTypeName,
        );
        state.path.pop();
        nullify ||= state.invalid;
        reported ||= state.reported;
      }
      return settled(state, nullify ? null : updated, reported);
    }
    case 'composite': {
      if (input === null) return settled(state, null);
      if (typeof input !== 'object' || Array.isArray(input))
        throw new Error(`A subgraph answered a value that is not an object for ${describeLast(state, shape.type, parentTypeName)}`);
      const typename = own(input as DataObject, '__typename');
      let runtime: GraphQLCompositeType = shape.type;
      if (typeof typename === 'string' && typename !== '') {
        const named = state.schema.getType(typename);
        if (!named || !(isObjectType(named) || isAbstractType(named))) {
          problem(state, `Invalid __typename found for object at ${describeLast(state, shape.type, parentTypeName)}.`);
          return settled(state, null, true);
        }
        runtime = named;
      }
      const output = (existing as DataObject | undefined) ?? jsonObject();
      const bubbled = shapeSelection(shape.items, input as DataObject, output, state, runtime);
      return settled(state, bubbled ? null : output, bubbled);
    }
    case 'leaf': {
      if (input === null) return settled(state, null);
      if (shape.valid(input)) return settled(state, input);
      problem(state, `Invalid value found for ${describeLast(state, shape.type, parentTypeName)}.`);
      return settled(state, null, true);
    }
  }
}
