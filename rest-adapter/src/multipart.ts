import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { RouteInputError, type UploadedFile } from './routes/route.js';

/** The fields and files of a multipart/form-data body, refusing files over `maxFileBytes`. */
export function readMultipart(
  req: IncomingMessage,
  maxFileBytes: number,
): Promise<{ fields: Record<string, string>; files: UploadedFile[] }> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fileSize: maxFileBytes, fields: 20, fieldSize: 10_000 } });
    } catch {
      reject(new RouteInputError(ErrorCode.BAD_REQUEST, 'The body must be multipart/form-data with the file in field `file`.', 'file'));
      return;
    }
    // Field names are the client's: a null-prototype object takes `__proto__` as a name like any other.
    const fields = Object.create(null) as Record<string, string>;
    const files: UploadedFile[] = [];
    let tooLarge = false;
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (fieldName, stream, info) => {
      const chunks: Buffer[] = [];
      // A body that ends inside the file fails the file stream too: without a listener that error would be uncaught.
      stream.on('error', () => reject(new RouteInputError(ErrorCode.BAD_REQUEST, 'The multipart body is malformed.', 'file')));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => {
        tooLarge = true;
      });
      stream.on('close', () =>
        files.push({ fieldName, fileName: info.filename ?? '', contentType: info.mimeType, data: Buffer.concat(chunks) }),
      );
    });
    parser.on('error', () => reject(new RouteInputError(ErrorCode.BAD_REQUEST, 'The multipart body is malformed.', 'file')));
    parser.on('close', () => {
      if (tooLarge) reject(new RouteInputError(ErrorCode.PAYLOAD_TOO_LARGE, `The file must be at most ${maxFileBytes} bytes.`, 'file'));
      else resolve({ fields, files });
    });
    req.pipe(parser);
  });
}
