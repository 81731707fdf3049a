import {
  getNamedType,
  getNullableType,
  isInputObjectType,
  isListType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { appError, ErrorCode } from '../contracts/errors.js';

/**
 * The most items each client-writable list may hold, by schema coordinate: `Type.field` for a
 * field of an input object, `Type.field(argument:)` for an argument of a root field. Each
 * subgraph keeps one such table (its `list-caps.ts`) for every list its SDL takes; its server
 * refuses a longer list before the resolver runs, and `test/schema/list-caps.test.ts` fails for a
 * list of the composed API schema that no table caps or whose description does not say its cap.
 */
export type ListCaps = Readonly<Record<string, number>>;

/** The coordinate of a root field's argument, as the tables write it. */
function argumentCoordinate(typeName: string, fieldName: string, argumentName: string): string {
  return `${typeName}.${fieldName}(${argumentName}:)`;
}

function isList(type: GraphQLInputType): boolean {
  return isListType(getNullableType(type));
}

/** Every list-typed input coordinate reachable from the schema's root fields' arguments (input objects followed, each once). */
export function listCoordinates(schema: GraphQLSchema): string[] {
  const found = new Set<string>();
  const visited = new Set<string>();
  const follow = (type: GraphQLInputType): void => {
    const named = getNamedType(type);
    if (!isInputObjectType(named) || visited.has(named.name)) return;
    visited.add(named.name);
    for (const field of Object.values(named.getFields())) {
      if (isList(field.type)) found.add(`${named.name}.${field.name}`);
      follow(field.type);
    }
  };
  for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
    if (!root) continue;
    for (const field of Object.values(root.getFields())) {
      for (const argument of field.args) {
        if (isList(argument.type)) found.add(argumentCoordinate(root.name, field.name, argument.name));
        follow(argument.type);
      }
    }
  }
  return [...found].sort();
}

/**
 * Checks one value of `type` against the caps, naming the list by its path from the argument
 * (`input.` left out: the `input` argument is the whole request body, as the REST routes send it).
 */
function checkValue(
  value: unknown,
  type: GraphQLInputType,
  coordinate: string | null,
  path: string,
  caps: ReadonlyMap<string, number>,
): void {
  if (value === null || value === undefined) return;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    if (!Array.isArray(value)) return;
    const cap = coordinate === null ? undefined : caps.get(coordinate);
    if (cap !== undefined && value.length > cap) {
      throw appError(ErrorCode.VALIDATION_FAILED, `${path} may hold at most ${cap} items; it holds ${value.length}.`, { field: path });
    }
    value.forEach((item: unknown, index) => checkValue(item, nullable.ofType, null, `${path}[${index}]`, caps));
    return;
  }
  if (!isInputObjectType(nullable) || typeof value !== 'object') return;
  const fields = nullable.getFields();
  for (const [name, field] of Object.entries(fields)) {
    if (!Object.hasOwn(value, name)) continue;
    const member = (value as Record<string, unknown>)[name];
    checkValue(member, field.type, `${nullable.name}.${name}`, path === '' ? name : `${path}.${name}`, caps);
  }
}

function checkArguments(
  typeName: string,
  field: GraphQLField<unknown, unknown>,
  args: Record<string, unknown>,
  caps: ReadonlyMap<string, number>,
): void {
  for (const argument of field.args) {
    if (!Object.hasOwn(args, argument.name)) continue;
    checkValue(
      args[argument.name],
      argument.type,
      argumentCoordinate(typeName, field.name, argument.name),
      argument.name === 'input' && !isList(argument.type) ? '' : argument.name,
      caps,
    );
  }
}

/**
 * Makes the schema's root fields refuse, with VALIDATION_FAILED naming the field and before their
 * resolvers run, any list longer than its cap. Throws at start-up for a cap whose coordinate is not
 * a list of this schema (a table that drifted from the SDL).
 */
export function enforceListCaps(schema: GraphQLSchema, caps: ListCaps): GraphQLSchema {
  const lists = new Set(listCoordinates(schema));
  const unknown = Object.keys(caps).filter((coordinate) => !lists.has(coordinate));
  if (unknown.length > 0) throw new Error(`List caps name no list of the schema: ${unknown.join(', ')}`);
  const table = new Map(Object.entries(caps));
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    if (!root) continue;
    for (const field of Object.values(root.getFields())) {
      const resolve = field.resolve;
      if (!resolve || !field.args.some((argument) => isList(argument.type) || isInputObjectType(getNullableType(argument.type)))) continue;
      field.resolve = (source, args: Record<string, unknown>, context, info) => {
        checkArguments(root.name, field, args, table);
        return resolve(source, args, context, info);
      };
    }
  }
  return schema;
}

/** Refuses a change that would make a stored list (`what`) longer than `cap`, naming `field`: for a total that grows across requests. */
export function checkListTotal(count: number, cap: number, field: string, what: string): void {
  if (count > cap)
    throw appError(ErrorCode.VALIDATION_FAILED, `${what} may number at most ${cap}; this change would make ${count}.`, { field });
}
