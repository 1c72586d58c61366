/**
 * The one multipart/form-data need netkeep has: the bytes of one named file part (NetAlertX's UI
 * uploads its devices CSV as a part named `file`). Parts are found by their boundary
 * (RFC 7578); the body was already size-limited by the content-type parser.
 */

/** The boundary parameter of a multipart Content-Type, or undefined. */
function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** The content of the part named `name` (the first one), or undefined when there is none. */
export function extractMultipartFile(body: Buffer, contentType: string, name: string): Buffer | undefined {
  const boundary = boundaryOf(contentType);
  if (boundary === undefined) return undefined;
  const delimiter = Buffer.from(`--${boundary}`);
  let start = body.indexOf(delimiter);
  while (start >= 0) {
    const partStart = start + delimiter.length;
    if (body.subarray(partStart, partStart + 2).toString() === '--') return undefined; // closing delimiter
    const next = body.indexOf(delimiter, partStart);
    if (next < 0) return undefined;
    const part = body.subarray(partStart, next);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd >= 0) {
      const headers = part.subarray(0, headerEnd).toString('latin1');
      const disposition = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(headers)?.[1] ?? '';
      const partName = /(?:^|;)\s*name="([^"]*)"/i.exec(disposition)?.[1];
      if (partName === name) {
        // The part's content ends with the CRLF that precedes the next delimiter.
        const content = part.subarray(headerEnd + 4);
        return content.subarray(0, content.length >= 2 ? content.length - 2 : content.length);
      }
    }
    start = next;
  }
  return undefined;
}
