/**
 * Skills (GEPA runs) need the GEPA API (issue 12), which this server does
 * not have yet: the page says so plainly instead of showing controls that
 * cannot work. When /gepa-runs exists, this folder gets the run form
 * ("Start GEPA run"), progress, candidates and "Download skill".
 */
export function SkillsPage() {
  return (
    <main className="main">
      <h1>Skills</h1>
      <div className="state" role="note">
        <p>
          <strong>Skills are not available yet.</strong> GEPA runs, which write a <code>SKILL.md</code> that makes your agent better with a reward model as the metric, need the GEPA API, which this server does not
          have yet.
        </p>
        <p className="muted">Until then, train a reward model on Models; its scores are what GEPA will optimize.</p>
      </div>
    </main>
  );
}
