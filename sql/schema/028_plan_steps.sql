-- Grain: one row per step of one optimize run's plan for the GPU fleet (athanor.recommend.plan),
-- in the order the plan takes them: idle capacity, GPU moves, commitments, spot, storage, then
-- what the plan lists apart and does not count.
create table if not exists plan_steps (
    run_id               varchar not null,
    as_of                date not null,
    step_order           integer not null,
    kind                 varchar not null,   -- idle_capacity | gpu_choice | reserved_instances | savings_plan | spot | lifecycle | ebs | underused_gpu | checkpointing
    scope                varchar not null,
    counted              boolean not null,   -- in the plan's total
    monthly_savings_usd  decimal(18, 2),
    assumes              json,               -- the orders of the earlier steps it is sized after
    action               varchar not null,
    evidence             varchar not null,   -- what the saving rests on
    detail               json,               -- the step's kind-specific fields (athanor plan)
    primary key (run_id, step_order)
)
