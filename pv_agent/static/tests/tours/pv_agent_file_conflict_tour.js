import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// A manager finds an entry in conflict with its file (edited in Odoo while the file changed),
// compares the two versions side by side and saves a merged version: the Odoo figure and the
// file's figure together.
registry.category("web_tour.tours").add("pv_agent_file_conflict", {
    url: "/odoo/action-pv_agent.action_pv_agent_entry",
    steps: () => [
        {
            trigger: ".o_list_view .o_data_row.text-danger:contains('pv-sz-01')",
            content: "the entry in conflict stands out in the list",
        },
        {
            trigger: ".o_list_view .o_data_row:contains('pv-sz-01') td[name='entry_id']",
            run: "click",
        },
        {
            trigger: ".o_form_view .o_pv_agent_conflict_alert",
            content: "the form says the Odoo version stays in use",
        },
        {
            trigger: ".o_form_view .ribbon:contains('Konflikt mit Datei')",
        },
        {
            trigger: ".o_form_view button.o_pv_agent_resolve_conflict",
            run: "click",
        },
        {
            trigger: ".modal .o_pv_agent_conflict_diff tr.o_pv_agent_diff_changed:contains('650 €'):contains('620 €')",
            content: "left the Odoo figure, right the file's",
        },
        {
            trigger: ".modal .o_pv_agent_conflict_diff td.bg-success-subtle:contains('7 %')",
            content: "the file's change of the rate",
        },
        screenshot("entry-conflict", ".modal .o_pv_agent_conflict_diff"),
        {
            trigger: ".modal .o_pv_agent_merged_text textarea",
            content: "merge: keep the Odoo amount, take the file's rate",
            run() {
                const textarea = this.anchor;
                textarea.value = textarea.value.replace("| 6 % |", "| 7 % |").replace("Satz von 6 %", "Satz von 7 %");
                textarea.dispatchEvent(new Event("input", { bubbles: true }));
                textarea.dispatchEvent(new Event("change", { bubbles: true }));
            },
        },
        {
            trigger: ".modal button.o_pv_agent_save_merged",
            run: "click",
        },
        {
            trigger: ".o_form_view:not(:has(.o_pv_agent_conflict_alert)):not(:has(.ribbon:contains('Konflikt mit Datei')))",
            content: "the conflict is resolved",
        },
        {
            trigger: ".o_form_view .alert-info:contains('In Odoo bearbeitet')",
            content: "the merged version still has to go back into the file",
        },
    ],
});
