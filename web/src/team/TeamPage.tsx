// The Team page: who is on the account and with which role, the review
// overlap, who did what, how far the members agree, and the targets they disagree on.
import { AgreementSection } from "./agreement";
import { DisputedSection } from "./disputed";
import { MembersSection, OverlapSetting } from "./members";
import { RetentionSetting } from "./retention";
import { ProgressSection } from "./progress";
import "./team.css";

export function TeamPage() {
  return (
    <main className="main team">
      <header className="page-head">
        <h1>Team</h1>
      </header>
      <MembersSection />
      <OverlapSetting />
      <ProgressSection />
      <AgreementSection />
      <DisputedSection />
      <RetentionSetting />
    </main>
  );
}
