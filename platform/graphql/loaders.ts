import DataLoader from 'dataloader';
import type { Collection, Document, Filter, Sort } from 'mongodb';

/**
 * One request's loader of documents by a unique field: all keys asked for in one tick
 * become one `find` with `$in`. Missing keys load as null.
 */
export function loaderByKey<T extends Document>(collection: Collection<T>, field: keyof T & string = '_id'): DataLoader<string, T | null> {
  return new DataLoader<string, T | null>(async (keys) => {
    // One key is sent as an equality, the simplest filter for any planner.
    const filter = keys.length === 1 ? { [field]: keys[0] } : { [field]: { $in: [...keys] } };
    const docs = await collection.find(filter as Filter<T>).toArray();
    const byKey = new Map(docs.map((doc) => [String(doc[field]), doc as T]));
    return keys.map((key) => byKey.get(key) ?? null);
  });
}

/**
 * One request's loader of the documents that share a field value (a user's cards, an
 * account's owner's beneficiaries): one `find` with `$in` for all keys, grouped in order.
 */
export function loaderOfGroups<T extends Document>(
  collection: Collection<T>,
  field: keyof T & string,
  options: { sort?: Sort; filter?: Filter<T> } = {},
): DataLoader<string, T[]> {
  return new DataLoader<string, T[]>(async (keys) => {
    const cursor = collection.find({ ...(options.filter ?? {}), [field]: { $in: [...keys] } } as Filter<T>);
    if (options.sort) cursor.sort(options.sort);
    const groups = new Map<string, T[]>(keys.map((key) => [key, []]));
    for (const doc of await cursor.toArray()) groups.get(String(doc[field]))?.push(doc as T);
    return keys.map((key) => groups.get(key) ?? []);
  });
}
