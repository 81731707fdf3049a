import type { StringRule } from '../../../platform/security/validate.js';

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1), as plain data. */
export type JsonSchema = { [keyword: string]: unknown };

/** The ECMA-262 pattern of a StringRule's `safeText`: no `<` or `>`, not only whitespace. */
const SAFE_TEXT = '^(?!\\s*$)[^<>]*$';
const SAFE_TEXT_RULE = 'text without < or >, not only whitespace';

/**
 * A string schema from the graph's own validation rule, so the document and the adapter's
 * request validation state exactly what the graph checks.
 */
export function stringOf(rule: StringRule, description?: string): JsonSchema {
  const schema: JsonSchema = { type: 'string' };
  if (rule.min !== undefined) schema.minLength = rule.min;
  if (rule.max !== undefined) schema.maxLength = rule.max;
  if (rule.pattern && rule.safeText)
    schema.allOf = [
      { pattern: rule.pattern.source, description: rule.patternText },
      { pattern: SAFE_TEXT, description: SAFE_TEXT_RULE },
    ];
  else if (rule.pattern) schema.pattern = rule.pattern.source;
  else if (rule.safeText) schema.allOf = [{ pattern: SAFE_TEXT, description: SAFE_TEXT_RULE }];
  if (description) schema.description = description;
  return schema;
}

/** The schema, or null. */
export function nullable(schema: JsonSchema): JsonSchema {
  if (allowsNull(schema)) return schema;
  // An enum (or const) lists its values, so null joins them; a lone type widens to [type, null].
  if (Array.isArray(schema.enum))
    return {
      ...schema,
      ...(typeof schema.type === 'string' ? { type: [schema.type, 'null'] } : {}),
      enum: [...(schema.enum as unknown[]), null],
    };
  if (typeof schema.type === 'string' && schema.const === undefined) return { ...schema, type: [schema.type, 'null'] };
  return { anyOf: [schema, { type: 'null' }] };
}

/**
 * A request object of the given properties; `required` lists the ones that must be there. An
 * optional property may be null, which means not sent (as the graph reads it). Extra
 * properties are allowed: legacy clients send them, and the adapter ignores them.
 */
export function object(properties: Record<string, JsonSchema>, required: string[] = [], extra: Partial<JsonSchema> = {}): JsonSchema {
  const typed = Object.fromEntries(
    Object.entries(properties).map(([name, schema]) => [name, required.includes(name) ? schema : nullable(schema)]),
  );
  return { type: 'object', properties: typed, ...(required.length ? { required } : {}), ...extra };
}

export function arrayOf(items: JsonSchema, extra: Partial<JsonSchema> = {}): JsonSchema {
  return { type: 'array', items, ...extra };
}

/** Whether a schema allows null (`type: [..., 'null']`, or an `anyOf` branch of null). */
function allowsNull(schema: JsonSchema): boolean {
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) return false;
  if (Array.isArray(schema.type)) return schema.type.includes('null');
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as JsonSchema[]).some((branch) => branch.type === 'null');
  return false;
}

/** The schema without its null: a member the adapter never sends as null. */
export function withoutNullType(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.type)) {
    const types = (schema.type as string[]).filter((type) => type !== 'null');
    return { ...schema, type: types.length === 1 ? types[0] : types };
  }
  if (Array.isArray(schema.anyOf)) {
    const branches = (schema.anyOf as JsonSchema[]).filter((branch) => branch.type !== 'null');
    if (branches.length === 1) {
      const { anyOf: _anyOf, ...rest } = schema;
      return { ...branches[0], ...rest };
    }
    return { ...schema, anyOf: branches };
  }
  return schema;
}

/**
 * The schema of an object after the adapter's `withoutNulls(item, names)`: the members `names`
 * are left out instead of null, so they become optional and never null. Every other member stays
 * as it is: one the spec lists without marking it optional is there, null when it has no value.
 */
export function omittingNulls(schema: JsonSchema, names: readonly string[]): JsonSchema {
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties) throw new Error('omittingNulls needs an object schema');
  const omitted = new Set(names);
  for (const name of omitted) if (!Object.hasOwn(properties, name)) throw new Error(`omittingNulls: the object has no ${name}`);
  const required = (schema.required as string[] | undefined) ?? [];
  return {
    ...schema,
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, property]) => [name, omitted.has(name) ? withoutNullType(property) : property]),
    ),
    required: required.filter((name) => !omitted.has(name) || !allowsNull(properties[name]!)),
  };
}
