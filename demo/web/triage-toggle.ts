// "Triage new mail": the account's `autoTriage` setting as a checkbox above the list, read
// with settings.get and changed with settings.update (PATCH /api/settings). The box always
// shows what the service answered: a failed change puts it back.
import { $, api, report } from './dom.ts';

export async function showTriageToggle(): Promise<void> {
  const box = $<HTMLInputElement>('auto-triage');
  box.checked = (await api.settings.get.query()).autoTriage;
  $('triage-toggle').hidden = false;
  box.onchange = async () => {
    const wanted = box.checked;
    box.disabled = true;
    box.setAttribute('aria-busy', 'true');
    try {
      box.checked = (await api.settings.update.mutate({ autoTriage: wanted })).autoTriage;
    } catch (err) {
      box.checked = !wanted;
      report(err);
    } finally {
      box.disabled = false;
      box.removeAttribute('aria-busy');
    }
  };
}
