import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSchema, isEnumType, isInputObjectType, type GraphQLSchema } from 'graphql';

const API_SCHEMA_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../schema/api-schema.graphql');
let api: GraphQLSchema | undefined;
/** The API schema the operations run against (what clients see: nothing `@inaccessible`), read once. */
export function apiSchema(): GraphQLSchema {
  api ??= buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'), { assumeValidSDL: true });
  return api;
}

/**
 * The values of one of the graph's enums, in the schema's order: a route checks a closed set
 * against these, so the schema is the one place the set is written.
 */
export function graphEnumValues(name: string): string[] {
  const type = apiSchema().getType(name);
  if (!isEnumType(type)) throw new Error(`${name} is not an enum of the API schema`);
  return type.getValues().map((value) => value.name);
}

/** The field names of one of the graph's input types, in the schema's order: what a route may pass on as that input. */
export function graphInputFieldNames(name: string): string[] {
  const type = apiSchema().getType(name);
  if (!isInputObjectType(type)) throw new Error(`${name} is not an input type of the API schema`);
  return Object.keys(type.getFields());
}
