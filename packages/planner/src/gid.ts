// The RoCE GID index, chosen the way NCCL's net_ib transport chooses it when
// NCCL_IB_GID_INDEX is unset (ncclIbGetGidIndex / ncclUpdateGidIndex):
// - start at index 0 and walk the table upward;
// - an entry of the wanted address family (NCCL_IB_ADDR_FAMILY, IPv4 by default)
//   replaces a current entry of the other family;
// - otherwise, among entries of the wanted family that are configured and not
//   link-local, one of the wanted RoCE version (NCCL_IB_ROCE_VERSION_NUM, 2 by default)
//   replaces a current entry of another version or an invalid one.
// The facts list non-empty entries only, so empty slots are skipped; a missing index 0
// stands for the empty entry NCCL would start from.
import type { Gid } from '@rankd/protocol';

export interface GidPreference {
  family: 'inet' | 'inet6';
  roceVersion: 1 | 2;
  /** A fixed index (NCCL_IB_GID_INDEX), used as is when present in the table. */
  fixedIndex: number | null;
}

export const DEFAULT_GID_PREFERENCE: GidPreference = { family: 'inet', roceVersion: 2, fixedIndex: null };

export interface GidChoice {
  /** null when the walk ends on an empty entry: NCCL would have no usable GID. */
  index: number | null;
  gid: string | null;
  /** Whether the chosen entry matches family and version and is routable. */
  ideal: boolean;
}

// An entry's classification packed in a small integer, because the planner walks
// every GID table of every node: bit 0 IPv4 family, bit 1 valid, bits 2+ version + 1.
type GidClass = number;
const INET = 1;
const VALID = 2;
const familyOf = (c: GidClass): 'inet' | 'inet6' => (c & INET ? 'inet' : 'inet6');
const versionOf = (c: GidClass) => (c >> 2) - 1;
const validOf = (c: GidClass) => (c & VALID) !== 0;

const MAPPED_PREFIX = '0000:0000:0000:0000:0000:ffff:';
const LINK_LOCAL_PREFIX = 'fe80:0000:0000:0000:';

/** The empty entry: IPv6 family (zeros are not IPv4-mapped), not valid, no version. */
const EMPTY: GidClass = 0;

export function chooseGid(gids: readonly Gid[], pref: GidPreference = DEFAULT_GID_PREFERENCE): GidChoice {
  if (pref.fixedIndex !== null) {
    const g = gids.find((e) => e.index === pref.fixedIndex);
    return { index: pref.fixedIndex, gid: g?.gid ?? null, ideal: g !== undefined && isIdeal(classify(g), pref) };
  }
  // the facts list entries by index already; sort a copy only when they do not
  let ordered = gids;
  for (let i = 1; i < gids.length; i++) {
    if (gids[i]!.index <= gids[i - 1]!.index) {
      ordered = [...gids].sort((a, b) => a.index - b.index);
      break;
    }
  }
  let current: Gid | undefined = ordered[0]?.index === 0 ? ordered[0] : undefined;
  let cur = current ? classify(current) : EMPTY;
  for (const candidate of ordered) {
    if (candidate.index === 0) continue;
    const cand = classify(candidate);
    if (familyOf(cand) !== familyOf(cur) && familyOf(cand) === pref.family) {
      current = candidate;
      cur = cand;
    } else if (familyOf(cand) === pref.family && validOf(cand)) {
      if ((versionOf(cur) !== versionOf(cand) || !validOf(cur)) && versionOf(cand) === pref.roceVersion) {
        current = candidate;
        cur = cand;
      }
    }
  }
  if (!current) return { index: null, gid: null, ideal: false };
  return { index: current.index, gid: current.gid, ideal: isIdeal(cur, pref) };
}

function isIdeal(c: GidClass, pref: GidPreference): boolean {
  return validOf(c) && familyOf(c) === pref.family && versionOf(c) === pref.roceVersion;
}

function classify(g: Gid): GidClass {
  const version = g.type === 'RoCE v2' ? 2 : g.type === 'IB/RoCE v1' ? 1 : -1;
  const versionBits = (version + 1) << 2;
  const t = g.gid;
  // the two shapes almost every table holds, recognised without parsing
  if (t.length === 39 && t.startsWith(MAPPED_PREFIX)) return versionBits | INET | VALID;
  if (t.length === 39 && t.startsWith(LINK_LOCAL_PREFIX)) return versionBits;
  // sysfs always prints eight groups of four hex digits; anything else is not a GID we trust
  if (
    t.length !== 39 ||
    t[4] !== ':' ||
    t[9] !== ':' ||
    t[14] !== ':' ||
    t[19] !== ':' ||
    t[24] !== ':' ||
    t[29] !== ':' ||
    t[34] !== ':'
  ) {
    return versionBits;
  }
  const w0 = word(t, 0);
  const w1 = word(t, 10);
  const w2 = word(t, 20);
  const w3 = word(t, 30);
  if (w0 < 0 || w1 < 0 || w2 < 0 || w3 < 0) return versionBits;
  const mapped = w0 === 0 && w1 === 0 && w2 === 0x0000ffff;
  const mappedMulticast = w0 === 0xff0e0000 && w1 === 0 && w2 === 0x0000ffff;
  const trailer = w1 | w2 | w3;
  const configured = !((w0 | trailer) === 0 || (w0 === 0xfe800000 && trailer === 0));
  const linkLocal = w0 === 0xfe800000 && w1 === 0;
  return versionBits | (mapped || mappedMulticast ? INET : 0) | (configured && !linkLocal ? VALID : 0);
}

/** The 32-bit word of "hhhh:hhhh" at `at`, or -1. */
function word(text: string, at: number): number {
  const hi = hex4(text, at);
  const lo = hex4(text, at + 5);
  return hi < 0 || lo < 0 ? -1 : ((hi << 16) | lo) >>> 0;
}

function hex4(text: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 4; i++) {
    const c = text.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) return -1;
    v = (v << 4) | d;
  }
  return v;
}

/** The preference NCCL would read from these environment overrides. */
export function gidPreferenceFromEnv(env: Readonly<Record<string, string>> | undefined): GidPreference {
  if (!env) return DEFAULT_GID_PREFERENCE;
  const family = env['NCCL_IB_ADDR_FAMILY'] === 'AF_INET6' ? 'inet6' : 'inet';
  const version = env['NCCL_IB_ROCE_VERSION_NUM'] === '1' ? 1 : 2;
  const fixed = env['NCCL_IB_GID_INDEX'];
  const fixedIndex = fixed !== undefined && /^\d+$/.test(fixed) ? Number(fixed) : null;
  return { family, roceVersion: version, fixedIndex };
}
