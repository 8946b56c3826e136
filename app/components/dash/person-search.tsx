import { useRef } from "react";
import { useSubmit } from "react-router";

export const personLabel = (p: { name: string; email: string }) => (p.name && p.name !== p.email ? `${p.name} <${p.email}>` : p.email);

/**
 * The `q` field of a GET form that narrows a page's person pickers (server/orgs/people-pickers.ts
 * findPeople), so anyone in an org of any size is found: without JavaScript, submit the form;
 * with it, the page follows as you type. Says when more people match than the pickers show.
 */
export function PersonSearch({ q, shown, more }: { q: string; shown: number; more: boolean }) {
  const submit = useSubmit();
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor="field-q" className="text-sm font-medium">
        Find a person
      </label>
      <input
        id="field-q"
        type="search"
        name="q"
        defaultValue={q}
        placeholder="part of a name or email"
        autoComplete="off"
        aria-describedby="field-q-hint"
        className="rounded border border-stone-300 bg-white px-3 py-2 text-stone-900 focus:border-stone-600 focus:outline-none focus:ring-2 focus:ring-stone-400"
        onChange={(event) => {
          const form = event.currentTarget.form;
          clearTimeout(timer.current);
          timer.current = setTimeout(() => form && submit(form, { replace: true, preventScrollReset: true }), 300);
        }}
      />
      <p id="field-q-hint" className="text-xs text-stone-600" role="status">
        {more
          ? `The menus show the first ${shown} ${q ? `matching “${q}”` : "people"} by email: type part of a name or email to find anyone else.`
          : q
            ? `${shown} ${shown === 1 ? "person matches" : "people match"} “${q}”.`
            : "Type part of a name or email to narrow the menus."}
      </p>
    </div>
  );
}
