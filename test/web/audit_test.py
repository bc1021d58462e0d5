"""The isolation audit page (/ui/audit) in headless Chromium, against `gpu-tenancy serve` on the
misconfigured fleet of test/testdata/audit (with its mig-parted config and the shipped scheduler
configuration).

Every holding /ui/api/audit lists must be on the page under its tenant with its boundary
sentence; the failing items must be exactly the fleet's three mistakes, each naming its object;
the page is reached from the landing page and fits a narrow window.
"""

import os

import browser
import unittest

from selenium.webdriver.common.by import By

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def source(relative):
    return os.path.join(SOURCE, relative)


class AuditPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # --demo only for its throwaway certificates: the cluster and policy are the files.
        cls.serve = browser.Process(
            'serve', '--demo', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0',
            '--cluster-file', source('test/testdata/audit/misconfigured.yaml'),
            '--policy', source('cmd/demo/policy.yaml'),
            '--mig-parted-config', source('test/testdata/audit/mig-parted.yaml'),
            '--scheduler-config', source('manifests/scheduler/config.yaml'))
        port = cls.serve.wait_for(r'ready tls_port=\d+ metrics_port=(\d+)\n').group(1)
        cls.url = f'http://127.0.0.1:{port}/'
        try:
            cls.driver = browser.start_browser()
        except Exception:
            cls.serve.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.serve.stop()

    def test_each_tenants_deal_and_the_failing_items(self):
        # Reached from the landing page.
        self.driver.get(self.url + 'ui/')
        self.driver.find_element(By.LINK_TEXT, 'Isolation audit').click()
        browser.wait_until(self.driver, lambda d: d.find_elements(By.ID, 'summary'),
                           message='the audit page never loaded')
        report = browser.get_json(self.url + 'ui/api/audit')

        sections = {s.get_attribute('data-tenant'): s.text
                    for s in browser.find_all(self.driver, 'section.tenant')}
        self.assertEqual(sorted(sections), sorted(t['tenant'] for t in report['tenants']))
        self.assertEqual(sorted(sections), ['acme', 'bank', 'gpu-platform', 'research'])
        shown = 0
        for tenant in report['tenants']:
            text = sections[tenant['tenant']]
            self.assertIn(f"tier: {tenant['tier']}", text)
            for device in tenant['devices']:
                self.assertIn(f"{device['kind']} {device['namespace']}/{device['name']} on "
                              f"{device['node']}", text)
                self.assertIn(device['isolation'], text)
                shown += 1
        self.assertEqual(shown, 4)
        # What a customer reads: acme's chat pod shares a fault domain with research; bank's
        # MIG instance is a hardware partition.
        self.assertIn('pod acme/chat on ts-plain: 1 x nvidia.com/gpu', sections['acme'])
        self.assertIn('Time-sliced GPU: one memory heap and one fault domain', sections['acme'])
        self.assertIn('research', sections['acme'])
        self.assertIn('MIG instance: a hardware partition', sections['bank'])

        failing = {}
        for check in browser.find_all(self.driver, 'section.check[data-status=fail]'):
            failing[check.get_attribute('data-check')] = [
                li.get_attribute('data-object') for li in browser.find_all(check, 'li')]
        self.assertEqual(failing, {
            'untrusted-isolation': ['pod/acme/chat'],
            'separate-resource-names': ['node/ts-plain'],
            'mig-config-applied': ['node/mig-drift'],
            # serve reads nvidia.com/mig.config through the same mig-parted file: its
            # contract guard finds the node the geometry check fails.
            'contract-held': ['node/mig-drift', 'pod/acme/chat'],
        })
        drift = browser.find(self.driver, 'section[data-check=mig-config-applied]').text
        self.assertIn('nvidia.com/mig-1g.10gb: expected 2, node shows 7', drift)
        self.assertIn('Fix:', drift)
        self.assertIn('4 fail', browser.find(self.driver, '#summary').text)
        not_checked = browser.find(self.driver, '#not-checked').text
        for item in ('host patch level', 'confidential computing',
                     'side channels across MIG instances'):
            self.assertIn(item, not_checked)
        # The whole report in one picture: the window as tall as the page.
        height = self.driver.execute_script('return document.documentElement.scrollHeight')
        self.driver.set_window_size(1280, min(height + 140, 4000))
        browser.screenshot(self.driver, 'audit')
        self.driver.set_window_size(480, 900)
        self.assertLessEqual(browser.horizontal_overflow(self.driver), 0)
        self.driver.set_window_size(1280, 800)
        self.assertEqual(browser.console_errors(self.driver), [])


if __name__ == '__main__':
    browser.main()
