import { ownValue } from '../../../platform/contracts/own.js';

/**
 * The data a query plan gathers: JSON objects from the subgraphs' answers, merged. Their keys are
 * response names a client chose (an alias may be `__proto__`), so they are read and written as
 * own properties only.
 */
export type DataObject = Record<string, unknown>;

/** `object[key]` when it is the object's own; undefined otherwise (never an inherited property). */
export function own(object: DataObject | null, key: string): unknown {
  return object === null ? undefined : ownValue(object, key);
}

/** Sets `object[key]` as an own property, even for a key such as `__proto__`. */
export function setOwn(object: DataObject, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/** A new data object without a prototype, so that no key finds an inherited property. */
export function emptyData(): DataObject {
  return Object.create(null) as DataObject;
}

/**
 * A new object that is sent as JSON: of the answer to the client, or of a subgraph request's
 * representations. A plain object, not one without a prototype: V8 keeps a plain object's
 * properties in fast mode, which the executor writes and `JSON.stringify` reads far faster than a
 * prototype-less object's dictionary. It is written through `setOwn` and read through `own` alone,
 * so no key a client chose reaches the prototype or finds an inherited property.
 */
export function jsonObject(): DataObject {
  return {};
}

function isDataObject(value: unknown): value is DataObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Merges `source` into `target`: objects key by key, lists of the same length element by element; anything else replaces. */
export function deepMerge(target: DataObject, source: unknown): void {
  if (!isDataObject(source)) return;
  for (const key of Object.keys(source)) {
    const value = source[key];
    if (value === undefined) continue;
    const current = own(target, key);
    if (isDataObject(current) && isDataObject(value)) deepMerge(current, value);
    else if (Array.isArray(current) && Array.isArray(value) && current.length === value.length) {
      const targets = current as unknown[];
      const sources = value as unknown[];
      for (let index = 0; index < sources.length; index++) {
        const element = targets[index];
        if (isDataObject(element) && isDataObject(sources[index])) deepMerge(element, sources[index]);
        else targets[index] = sources[index];
      }
    } else setOwn(target, key, value);
  }
}
