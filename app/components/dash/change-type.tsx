import { changeTypes } from "../../../constants/change-types.ts";

/**
 * The kind of change (decision 059), one select for the new-issue and edit forms. Optional for
 * people: the rule is for agents' creates. `unsaid` offers "not said", which the edit form only
 * shows while the issue has none (an update can correct a changeType, not remove it).
 */
export function ChangeTypeSelect({ id, defaultValue, className, unsaid = true }: { id: string; defaultValue: string; className: string; unsaid?: boolean }) {
  return (
    <select id={id} name="changeType" defaultValue={defaultValue} className={className}>
      {unsaid ? <option value="">not said</option> : null}
      {changeTypes.map((type) => (
        <option key={type} value={type}>{type}</option>
      ))}
    </select>
  );
}
