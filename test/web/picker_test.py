"""The sharing-mode picker (web/picker.html) in headless Chromium, against `gpu-tenancy ui`.

The worked example of cmd/demo/plan-example.yaml typed into the form must give 4 GPUs and the
3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb cut; an L40S fleet must be flagged as having no hardware
boundary (driven by keyboard only); a VM isolation requirement must be flagged for vGPU
licensing; the address must restore the plan; a planner error must be shown with its reason;
the map page, which only `serve` feeds, must say so.
"""

import browser
import unittest

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

# cmd/demo/plan-example.yaml, as someone would type it into the form: per row, what goes into
# each control in tab order. A text field gets the text, a select the start of the option's label
# (as a keyboard picks it), a checkbox a space to tick it; None leaves the control as it is (new
# rows start with empty fields and each select at its first option).
#                 node      GPU model  GPUs zone
EXAMPLE_FLEET = [['h100-a', 'H100-8', '2', 'a'],
                 ['h100-b', None,     '2', 'b']]  # a new row takes the model of the row above
PEAK = 'me'  # "measured peak"
MODEL = 'mo'  # "model"
# name, tenant, isolation, latency, kind, replicas, mirrored, sharing, memory as, then the peak
# or the model's parameters, bytes per parameter, layers, KV heads, head dim, tokens, sequences.
EXAMPLE_WORKLOADS = [
    ['acme-chat', 'acme', 'ten', 'sla', 'inf', '1', ' ', 'auto', MODEL,
     '13B', '2', '40', '40', '128', '4096', '2'],
    ['bank-assist', 'bank', 'ten', None, None, None, ' ', None, PEAK, '16Gi'],
    ['cobalt-code', 'cobalt', 'ten', None, None, None, ' ', None, MODEL,
     '6.74B', '1', '32', '32', '128', '2048', '1'],
    ['delta-summarise', 'delta', None, None, None, None, None, None, None, '8Gi'],
    ['delta-classify', 'delta', None, None, None, None, None, None, MODEL,
     '7B', '0.5', '28', '4', '128', '8192', '8'],
    ['embed-pool', 'search', None, None, None, '7', None, None, None, '3584Mi'],
    ['nightly-finetune', 'research', None, 'be', 'tr', None, None, None, None, '70Gi'],
]
ZONE_CUT = '3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb'


def type_into(row, name, value):
    field = row.find_element(By.NAME, name)
    field.clear()
    field.send_keys(value)


def choose(row, name, value):
    Select(row.find_element(By.NAME, name)).select_by_value(value)


def keyboard_fill(row, values, replace):
    """Types `values` into the row's controls from its first one on, with Tab between them, as
    one string of key presses (one WebDriver round trip per row, not per field). With `replace`,
    each text first selects what the control holds (Ctrl+A), so it is typed over."""
    keys = ''
    for value in values:
        if value is not None:
            keys += (Keys.CONTROL + 'a' + Keys.NULL if replace else '') + value
        keys += Keys.TAB
    row.find_element(By.TAG_NAME, 'input').send_keys(keys)


class PickerCase(unittest.TestCase):
    """A `gpu-tenancy ui` and a browser for the cases of one class, and what they share."""

    @classmethod
    def setUpClass(cls):
        cls.ui, cls.url = browser.start_ui()
        try:
            cls.driver = browser.start_browser()
        except Exception:
            cls.ui.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.ui.stop()

    def open_picker(self, address='picker.html'):
        self.driver.get(self.url + address)
        self.wait_for_plan()

    def wait_for_plan(self):
        browser.wait_until(self.driver, lambda d: d.find_element(By.ID, 'status').text.startswith(
            ('Planned', 'No plan')), message='the picker never answered')

    def plan(self):
        """Presses Plan and waits for the answer to this input."""
        self.driver.execute_script("document.getElementById('status').textContent = ''")
        self.driver.find_element(By.ID, 'plan-button').click()
        self.wait_for_plan()

    def text(self, element_id):
        return self.driver.find_element(By.ID, element_id).text

    def flags(self):
        return [li.text for li in self.driver.find_elements(By.CSS_SELECTOR, '#flags li')]

    def geometries(self):
        """{(node, GPU index): the cut as the card's caption shows it} for the MIG GPUs."""
        return {(f.get_attribute('data-node'), f.get_attribute('data-index')):
                f.find_element(By.CLASS_NAME, 'geometry').text
                for f in self.driver.find_elements(By.CSS_SELECTOR, 'figure.gpu[data-use=mig]')}

    def assert_no_console_errors(self, allowed=()):
        self.assertEqual(browser.console_errors(self.driver, allowed), [])

    def enter_worked_example(self):
        d = self.driver
        for rows, add, values in (('.fleet-row', 'add-node', EXAMPLE_FLEET),
                                  ('.workload-row', 'add-workload', EXAMPLE_WORKLOADS)):
            missing = len(values) - len(d.find_elements(By.CSS_SELECTOR, rows))
            if missing > 0:
                button = d.find_element(By.ID, add)
                clicks = ActionChains(d)
                for _ in range(missing):
                    clicks.click(button)
                clicks.perform()
            for i, (row, row_values) in enumerate(zip(browser.find_all(d, rows), values)):
                keyboard_fill(row, row_values, replace=i == 0)  # the first rows hold the starter


class WorkedExampleTest(PickerCase):
    def test_worked_example_gives_four_gpus_and_the_zone_cut(self):
        self.open_picker()
        self.enter_worked_example()
        self.plan()
        self.assertEqual(self.text('error'), '')
        self.assertEqual(self.text('gpus-used'), '4')
        self.assertEqual(self.text('baseline-gpus'), '7')
        self.assertEqual(self.text('gpus-saved'), '3')
        self.assertEqual(self.geometries(), {
            ('h100-a', '0'): ZONE_CUT,
            ('h100-a', '1'): ' + '.join(['1g.10gb'] * 7),
            ('h100-b', '0'): ZONE_CUT,
        })
        whole = browser.find(self.driver, 'figure.gpu[data-node=h100-b][data-index="1"]')
        self.assertIn('nightly-finetune', whole.text)
        # The drawing, not just the caption: acme's 3g.40gb sits on memory slices 4-7, the right
        # half of the card.
        card = browser.find(self.driver, 'figure.gpu[data-node=h100-a][data-index="0"]')
        grid = card.find_element(By.CLASS_NAME, 'slices').rect
        acme = card.find_element(By.CSS_SELECTOR, '.slice[data-profile="3g.40gb"]')
        self.assertEqual(acme.text.split(), ['3g.40gb', 'acme'])
        self.assertEqual(acme.get_attribute('data-workload'), 'acme-chat')
        self.assertAlmostEqual(acme.rect['x'], grid['x'] + grid['width'] / 2, delta=4)
        self.assertAlmostEqual(acme.rect['width'], grid['width'] / 2, delta=4)
        mechanism = browser.find(self.driver, 'tr[data-workload=acme-chat] .mechanism')
        self.assertEqual(mechanism.text, 'MIG 3g.40gb on H100-80GB')
        rule = self.driver.find_element(By.CSS_SELECTOR, 'tr[data-workload=acme-chat] .rule')
        self.assertIn('untrusted tenant: needs a hardware boundary', rule.text)
        smi = self.driver.find_element(By.CSS_SELECTOR, '[data-output=nvidia-smi] code')
        self.assertIn('nvidia-smi mig -i 0 -cgi 9,14,19,19 -C', smi.get_attribute('textContent'))
        copy = self.driver.find_element(By.CSS_SELECTOR, '[data-output=nvidia-smi] button')
        self.driver.execute_script('arguments[0].scrollIntoView()', copy)
        copy.click()
        # Copied, or selected for Ctrl+C where the clipboard is not allowed (as headless may be).
        browser.wait_until(self.driver, lambda d: copy.text != 'Copy', message='Copy did nothing')
        self.assertIn(copy.text, ('Copied', 'Selected: press Ctrl+C'))
        for output in ('mig-parted', 'resource-claims', 'pods', 'policy', 'plan-input'):
            self.driver.find_element(By.CSS_SELECTOR, f'[data-output={output}]')
        self.driver.execute_script("document.getElementById('plan').scrollIntoView()")
        browser.screenshot(self.driver, 'picker-worked-example')

        # The address holds the plan: opening it elsewhere shows the same plan and form.
        address = self.driver.current_url
        self.assertIn('#plan=', address)
        self.driver.get('about:blank')
        self.driver.get(address)
        self.wait_for_plan()
        self.assertEqual(self.text('gpus-used'), '4')
        self.assertEqual(self.geometries()[('h100-b', '0')], ZONE_CUT)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, '.workload-row')), 7)

        # Readable on a narrow window: nothing wider than the window but the scrolling table.
        self.driver.set_window_size(480, 900)
        self.assertLessEqual(browser.horizontal_overflow(self.driver), 0)
        browser.screenshot(self.driver, 'picker-narrow')
        self.driver.set_window_size(1280, 800)
        self.assert_no_console_errors()

    def test_landing_page_links_the_worked_example(self):
        self.driver.get(self.url)
        self.driver.find_element(By.ID, 'worked-example').click()
        self.wait_for_plan()
        self.assertEqual(self.text('gpus-used'), '4')
        self.assertEqual(self.geometries()[('h100-a', '0')], ZONE_CUT)
        self.assert_no_console_errors()


class FlagsTest(PickerCase):
    def test_l40s_fleet_is_flagged_by_keyboard_alone(self):
        self.open_picker()
        d = self.driver

        def press(*sequence):
            d.switch_to.active_element.send_keys(*sequence)

        # skip link, three nav links, the first node's name, its GPU model.
        press(Keys.TAB * 6)
        self.assertEqual(d.switch_to.active_element.get_attribute('name'), 'gpu')
        press('L40S')
        self.assertEqual(d.switch_to.active_element.get_attribute('value'), 'L40S')
        press(Keys.TAB)
        self.assertEqual(d.switch_to.active_element.get_attribute('name'), 'memory')
        self.assertEqual(d.switch_to.active_element.get_attribute('value'), '48Gi')
        # On to the workload's isolation: count, zone, remove, add node, name, tenant.
        press(Keys.TAB * 7)
        self.assertEqual(d.switch_to.active_element.get_attribute('name'), 'isolation')
        press('process')
        d.execute_script("document.getElementById('status').textContent = ''")
        press(Keys.SHIFT + Keys.TAB, Keys.ENTER)  # Enter in the tenant field submits the form
        self.wait_for_plan()
        mechanism = d.find_element(By.CSS_SELECTOR, 'tr[data-workload=chat] .mechanism')
        self.assertEqual(mechanism.text, 'MPS on L40S')
        flags = self.flags()
        # Tagged as such, and the planner's own words say it.
        self.assertTrue(any(f.startswith('No hardware boundary:') and
                            'no hardware boundary' in f.split(':', 1)[1] for f in flags), flags)
        self.assertEqual(self.geometries(), {})
        d.execute_script("document.getElementById('plan').scrollIntoView()")
        browser.screenshot(self.driver, 'picker-l40s')
        self.assert_no_console_errors()

    def test_vm_isolation_is_flagged_for_vgpu_licensing(self):
        self.open_picker()
        row = self.driver.find_element(By.CSS_SELECTOR, '.workload-row')
        choose(row, 'isolation', 'vm')
        self.plan()
        flags = self.flags()
        self.assertTrue(any(f.startswith('vGPU licensing:') and 'licensed per concurrent vGPU' in f
                            for f in flags), flags)
        mechanism = self.driver.find_element(By.CSS_SELECTOR, 'tr[data-workload=chat] .mechanism')
        self.assertEqual(mechanism.text, 'VM boundary (not placed)')
        self.assertEqual(self.text('gpus-used'), '0')
        browser.screenshot(self.driver, 'picker-vm')
        self.assert_no_console_errors()

    def test_planner_error_is_shown_with_its_reason(self):
        self.open_picker()
        row = self.driver.find_element(By.CSS_SELECTOR, '.workload-row')
        type_into(row, 'highWaterMark', '100Gi')
        self.plan()
        self.assertIn('cannot fit', self.text('error'))
        self.assertIn('chat', self.text('error'))
        self.assertFalse(self.driver.find_element(By.ID, 'plan').is_displayed())
        browser.screenshot(self.driver, 'picker-error')
        # The 400 itself is logged by the browser as a failed load; nothing else may be.
        self.assert_no_console_errors(allowed=[r'api/plan\?input=.* 400'])

    def test_map_under_ui_says_where_the_map_is(self):
        self.driver.get(self.url + 'map.html')
        browser.wait_until(self.driver, lambda d: d.find_element(By.ID, 'error').text,
                           message='the map page under ui never explained itself')
        self.assertIn('gpu-tenancy serve', self.text('error'))
        self.assertFalse(self.driver.find_element(By.ID, 'auto-refresh').is_selected())
        self.assert_no_console_errors(allowed=[r'api/map - .* 404'])


if __name__ == '__main__':
    browser.main()
