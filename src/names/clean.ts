/**
 * What a name from the network may become in the catalogue. Every source (lease files written by
 * another program, answers of devices anyone on the LAN controls) is untrusted text: a name is
 * trimmed, and refused (not repaired) when it is empty, longer than 255 characters or holds a
 * control character. Repairing would store a half-name nobody gave; refusing leaves the device to
 * the next source. HTML and SQL-looking text are plain text to netkeep (parameterised SQL, the
 * console renders text), so they are kept as the source gave them.
 */

/** Longest name kept (a DNS name is at most 253 characters; DHCP host names are shorter still). */
const maxNameLength = 255;

// C0, DEL and C1 controls, and the Unicode line/paragraph separators that break log lines.
// eslint-disable-next-line no-control-regex
const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** The clean form of a name, or '' when there is none to keep. */
export function cleanName(raw: string): string {
  const name = raw.trim();
  if (name === '' || name.length > maxNameLength || controlCharacters.test(name)) return '';
  // U+FFFD: the text was not valid UTF-8 (a binary file read as text); no name to trust.
  if (name.includes('\ufffd')) return '';
  return name;
}

/** A DNS answer's name without its trailing dot and, for mDNS, the `.local` suffix. */
export function hostPart(name: string, dropLocal: boolean): string {
  let host = name.replace(/\.$/, '');
  if (dropLocal) host = host.replace(/\.local$/i, '');
  return host;
}
