/**
 * The words the duplicate gate compares (decision 066): an issue's title words and its body's
 * first words, normalized, without the words every backlog shares. Pure functions; the index and
 * the lookup are in similar.ts.
 */

/** Body words indexed and compared, the first distinct ones: what an issue is about is said early. */
export const BODY_TERMS = 64;

/**
 * Words that say nothing about which work an issue is: English function words, and the words of
 * any tracker (add, fix, issue, test). Rarity in the org (similar.ts) drops the rest of what is common.
 */
const stopwords = new Set(
  (
    "the and for with that this from into onto over under when then than they them their there these those what which " +
    "who whom whose why how where while will would should could can cannot must may might shall not nor but its it's " +
    "are was were been being have has had having does did doing done our ours your yours you his her hers him she " +
    "all any each every some such only own same other others more most much many few also just very too again once " +
    "about above after before below between through during until upon via per out off yet still here now need needs " +
    "add adds added adding fix fixes fixed fixing make makes making use uses using used update updates updated " +
    "change changes changed remove removes removed create creates created new old implement implements implemented " +
    "support supports improve improves issue issues task tasks bug bugs feature features ticket todo item items work " +
    "works working should want wants able way ways thing things get gets set sets run runs see instead like one two " +
    "first last next etc e.g i.e please note"
  ).split(" "),
);

/** A word as compared: lower case, without diacritics, a plural's ending dropped ("invoices" is "invoice"). */
function normalized(word: string): string | null {
  const lower = word.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase();
  if (lower.length < 3 || lower.length > 40 || /^\d+$/.test(lower) || stopwords.has(lower)) return null;
  if (lower.endsWith("ies") && lower.length > 4) return `${lower.slice(0, -3)}y`;
  if (/(?:sh|x|ss)es$/.test(lower)) return lower.slice(0, -2);
  if (lower.endsWith("s") && !lower.endsWith("ss") && lower.length > 3) {
    const singular = lower.slice(0, -1);
    return stopwords.has(singular) ? null : singular;
  }
  return lower;
}

function wordsOf(text: string, limit: number): Set<string> {
  const terms = new Set<string>();
  for (const word of text.split(/[^\p{L}\p{N}]+/u)) {
    const term = normalized(word);
    if (term) terms.add(term);
    if (terms.size >= limit) break;
  }
  return terms;
}

/** An issue's terms: its title's, and its body's first BODY_TERMS not already in the title. */
export interface Terms {
  title: Set<string>;
  body: Set<string>;
}

export function termsOf(title: string, body: string | null | undefined): Terms {
  const inTitle = wordsOf(title, 100);
  const inBody = wordsOf(body ?? "", BODY_TERMS + inTitle.size);
  for (const term of inTitle) inBody.delete(term);
  return { title: inTitle, body: new Set([...inBody].slice(0, BODY_TERMS)) };
}

/** Issue identifiers a text names (`WEB-12`, `rtsc-4`), upper-cased, each once. */
export function mentionsIn(text: string): string[] {
  const found = text.match(/(?<![\p{L}\p{N}_-])[A-Za-z][A-Za-z0-9]{1,9}-[1-9][0-9]{0,8}(?![\p{L}\p{N}_-])/gu) ?? [];
  return [...new Set(found.map((m) => m.toUpperCase()))];
}
