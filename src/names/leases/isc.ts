/**
 * ISC dhcpd's `dhcpd.leases` (also pfSense's and OPNsense's ISC backend): `lease <ip> { ... }`
 * blocks, appended as leases change, so the last block of an address wins. Inside a block we read
 * `hardware ethernet <mac>;`, `uid <string or hex>;`, `client-hostname "<name>";` and
 * `ends <weekday> <yyyy/mm/dd> <hh:mm:ss>;` (UTC) or `ends never;`. Strings use dhcpd's escapes
 * (`\ooo` octal, `\"`, `\\`). A block cut short by a write in progress is not understood.
 */
import { bytesToClientId, makeLease, type Lease, type ParsedLeases } from './lease.js';

type Token = { kind: 'word' | 'string'; value: string; bytes?: Buffer } | { kind: '{' | '}' | ';' };

/** Tokens of the file: words, quoted strings (decoded to bytes), braces and semicolons. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (c === '#') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (/\s/.test(c)) i++;
    else if (c === '{' || c === '}' || c === ';') {
      tokens.push({ kind: c });
      i++;
    } else if (c === '"') {
      const bytes: number[] = [];
      i++;
      let closed = false;
      while (i < text.length) {
        const d = text[i] ?? '';
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === '\\') {
          const octal = /^[0-7]{3}/.exec(text.slice(i + 1, i + 4));
          if (octal !== null) {
            bytes.push(parseInt(octal[0], 8) & 0xff);
            i += 4;
            continue;
          }
          const escaped = text[i + 1] ?? '';
          bytes.push(...Buffer.from(escaped === 'n' ? '\n' : escaped === 't' ? '\t' : escaped, 'utf8'));
          i += 2;
          continue;
        }
        bytes.push(...Buffer.from(d, 'utf8'));
        i++;
      }
      // An unterminated string: the file ends mid-write; what follows is not understood.
      if (!closed) break;
      const buffer = Buffer.from(bytes);
      tokens.push({ kind: 'string', value: buffer.toString('utf8'), bytes: buffer });
    } else {
      const match = /^[^\s{};"#]+/.exec(text.slice(i, i + 4096));
      const word = match?.[0] ?? c;
      tokens.push({ kind: 'word', value: word });
      i += word.length;
    }
  }
  return tokens;
}

function endsAt(words: string[]): Date | null {
  // `ends 4 2026/11/26 12:34:18` (UTC), `ends never`, `ends epoch 1795699865`.
  if (words[0] === 'epoch') return new Date(Number(words[1]) * 1000);
  const date = /^(\d{4})\/(\d{2})\/(\d{2})$/.exec(words[1] ?? '');
  const time = /^(\d{2}):(\d{2}):(\d{2})$/.exec(words[2] ?? '');
  if (date === null || time === null) return null;
  const value = new Date(`${date[1]}-${date[2]}-${date[3]}T${time[1]}:${time[2]}:${time[3]}Z`);
  return Number.isNaN(value.getTime()) ? null : value;
}

export function parseIscLeases(text: string): ParsedLeases {
  const tokens = tokenize(text);
  const byIp = new Map<string, Lease | null>();
  let rejected = 0;
  let i = 0;
  while (i < tokens.length) {
    const token = tokens[i];
    const next = tokens[i + 1];
    const open = tokens[i + 2];
    if (token?.kind !== 'word' || token.value !== 'lease' || next?.kind !== 'word' || open?.kind !== '{') {
      i++;
      continue;
    }
    const ip = next.value;
    i += 3;
    let mac = '';
    let hostname = '';
    let clientId = '';
    let expires: Date | null = null;
    let closed = false;
    let statement: Token[] = [];
    for (; i < tokens.length; i++) {
      const t = tokens[i];
      if (t === undefined) break;
      if (t.kind === '}') {
        closed = true;
        i++;
        break;
      }
      if (t.kind !== ';') {
        statement.push(t);
        continue;
      }
      const words = statement.map((s) => (s.kind === 'word' || s.kind === 'string' ? s.value : ''));
      const first = statement[0];
      if (words[0] === 'hardware' && words[1] === 'ethernet') mac = words[2] ?? '';
      else if (words[0] === 'client-hostname') hostname = words[1] ?? '';
      else if (words[0] === 'ends') expires = endsAt(words.slice(1));
      else if (words[0] === 'uid' && first !== undefined) {
        const value = statement[1];
        if (value?.kind === 'string' && value.bytes !== undefined) clientId = bytesToClientId(value.bytes);
        else if (value?.kind === 'word') clientId = value.value;
      }
      statement = [];
    }
    if (!closed) {
      rejected++;
      break;
    }
    // A block without a MAC (a free or abandoned address) names nobody, but it is the address's
    // last word: an earlier block of that address no longer holds.
    byIp.set(ip, mac === '' ? null : makeLease(mac, ip, hostname, clientId, expires));
    if (mac !== '' && byIp.get(ip) === null) rejected++;
  }
  const leases = [...byIp.values()].filter((lease): lease is Lease => lease !== null);
  return { leases, rejected };
}
