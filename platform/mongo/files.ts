import type { GridFSBucket } from 'mongodb';

/** Leading bytes of the file types the services accept. */
const FILE_SIGNATURES = {
  'image/jpeg': [0xff, 0xd8, 0xff],
  'image/png': [0x89, 0x50, 0x4e, 0x47],
  'image/gif': [0x47, 0x49, 0x46, 0x38],
  'application/pdf': [0x25, 0x50, 0x44, 0x46],
} as const;
export type FileType = keyof typeof FILE_SIGNATURES;

/** The type of a file by its content, among `allowed`, or null. */
export function detectFileType(bytes: Buffer, allowed: readonly FileType[]): FileType | null {
  return allowed.find((type) => FILE_SIGNATURES[type].every((byte, i) => bytes[i] === byte)) ?? null;
}

/** Writes one file into a GridFS bucket under the given id. */
export function storeFile(bucket: GridFSBucket, id: string, name: string, bytes: Buffer, metadata: Record<string, unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    const upload = bucket.openUploadStreamWithId(id as never, name.slice(0, 200), { metadata });
    upload.once('finish', () => resolve());
    upload.once('error', reject);
    upload.end(bytes);
  });
}
